package broadcast_test

import (
	"fmt"
	"io"
	"os"

	"github.com/ptyhub/ptyhub/broadcast"
)

// A producer writes while a reader follows the stream from its own offset: take
// the Notify channel, read what is there, wait on the channel when there is
// nothing, stop at io.EOF.
func Example() {
	h := broadcast.New(0)
	go func() { // the producer; ends after Close
		for i := range 3 {
			fmt.Fprintf(h, "line %d\n", i)
		}
		h.Close()
	}()

	var off int64
	p := make([]byte, 4096)
	for {
		wake := h.Notify()
		n, missed, err := h.ReadAt(p, off)
		if err == io.EOF {
			break
		}
		if missed > 0 {
			fmt.Printf("[%d bytes missed]\n", missed)
		}
		os.Stdout.Write(p[:n])
		off += missed + int64(n)
		if n == 0 {
			<-wake
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
	h.Write([]byte("hello, "))
	h.Write([]byte("world\n"))

	p := make([]byte, 64)
	n, missed, _ := h.ReadAt(p, 0)
	fmt.Printf("missed %d, then %q; Start %d, End %d\n", missed, p[:n], h.Start(), h.End())
	// Output:
	// missed 5, then ", world\n"; Start 5, End 13
}
