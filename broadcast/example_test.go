package broadcast_test

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/ptyhub/ptyhub/broadcast"
)

// A producer writes while a reader follows the stream with a cursor: read
// what is there, wait when there is nothing, stop at io.EOF.
func Example() {
	h := broadcast.New(0)
	go func() { // the producer; ends after Close
		for i := range 3 {
			fmt.Fprintf(h, "line %d\n", i)
		}
		h.Close()
	}()

	c := h.NewCursor(0)
	p := make([]byte, 4096)
	for {
		n, missed, err := c.Read(p)
		if err == io.EOF {
			break
		}
		if missed > 0 {
			fmt.Printf("[%d bytes missed]\n", missed)
		}
		os.Stdout.Write(p[:n])
		if n == 0 {
			h.WaitFor(context.Background(), c.Offset())
		}
	}
	// Output:
	// line 0
	// line 1
	// line 2
}

// A reader that fell behind the ring learns exactly how much it missed.
func Example_missed() {
	h := broadcast.New(8) // keep the last 8 bytes
	c := h.NewCursor(0)
	h.Write([]byte("hello, "))
	h.Write([]byte("world\n"))

	p := make([]byte, 64)
	n, missed, _ := c.Read(p)
	fmt.Printf("missed %d, then %q; Start %d, End %d\n", missed, p[:n], h.Start(), h.End())
	// Output:
	// missed 5, then ", world\n"; Start 5, End 13
}
