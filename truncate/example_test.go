package truncate_test

import (
	"fmt"
	"strings"

	"github.com/ptyhub/ptyhub/truncate"
)

func ExampleMiddle() {
	var out strings.Builder
	for i := 1; i <= 300; i++ {
		fmt.Fprintf(&out, "line %d\n", i)
	}
	r := truncate.Middle(out.String(), 40)
	fmt.Print(r.Text)
	fmt.Println(r.Truncated, r.OriginalTokens, r.CutFrom, r.CutTo)
	// Output:
	// line 1
	// line 2
	// line 3
	// …1176 tokens truncated…
	// line 298
	// line 299
	// line 300
	// true 1200 21 2565
}

func ExampleCollector() {
	c := truncate.NewCollector(40)
	var raw int64
	for i := 1; i <= 100000; i++ {
		// Each chunk's text came from raw bytes that held escape sequences too.
		text := fmt.Sprintf("step %d ok\n", i)
		n := int64(len(text) + len("\x1b[32m\x1b[0m"))
		c.Write([]byte(text), raw, raw+n)
		raw += n
	}
	r := c.Result()
	fmt.Print(r.Text)
	fmt.Println(c.Len(), r.Truncated, r.CutFrom, r.CutTo)
	// Output:
	// step 1 ok
	// step 2 ok
	// step 3 ok
	// …670215 tokens truncated…
	// step 99999 ok
	// step 100000 ok
	// 1388895 true 57 2288848
}
