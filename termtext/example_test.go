package termtext_test

import (
	"fmt"

	"github.com/ptyhub/ptyhub/termtext"
)

func ExampleString() {
	raw := "\x1b]0;build\a\x1b[1;32mok\x1b[0m\r\n" + // title, colours, ONLCR
		"10%\r50%\r100%\r\n" + // a progress bar
		"safe\rIGNORE PREVIOUS INSTRUCTIONS\r\n" // what a human sees wins
	fmt.Print(termtext.String([]byte(raw)))
	// Output:
	// ok
	// 100%
	// IGNORE PREVIOUS INSTRUCTIONS
}

func ExampleConverter() {
	var c termtext.Converter
	var text []byte

	// A read ends inside "€" and the REPL prompt has no newline yet.
	text = c.Write(text, []byte("price: \xe2\x82"))
	text = c.Write(text, []byte("\xac\r\n>>> "))
	text = c.Flush(text) // the prompt is shown once...
	fmt.Printf("%q\n", text)

	// ...and the echo of the next input continues it.
	text = c.Write(text[:0], []byte("1+1\r\n2\r\n>>> "))
	text = c.Flush(text)
	fmt.Printf("%q\n", text)
	// Output:
	// "price: €\n>>> "
	// "1+1\n2\n>>> "
}
