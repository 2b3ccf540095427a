package truncate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// Past 64 MiB a block's cheap estimate covers only its first estimateSpan bytes, scaled
// to the block: the count still depends on the bytes alone (not on how reads split
// them) and stays within 1% of estimating every byte, on varied output.
func TestTokenCounterLongStream(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	var data []byte
	for len(data) < 96<<20 {
		switch r.IntN(3) {
		case 0:
			data = fmt.Appendf(data, "2026-11-24T23:%02d:%02d.%03dZ INFO request id=%d path=/api/v1/items/%d status=%d\n", r.IntN(60), r.IntN(60), r.IntN(1000), r.Uint64(), r.IntN(1e6), 200+r.IntN(300))
		case 1:
			data = fmt.Appendf(data, `{"user":%d,"name":"user-%x","tags":["a","b"],"score":%.3f}`+"\n", r.IntN(1e5), r.Uint32(), r.Float64())
		default:
			data = fmt.Appendf(data, "\x1b[32m✓\x1b[0m test_%d passed in %dms — 完了\n", r.IntN(1e4), r.IntN(900))
		}
	}
	count := func(chunk func() int, span int64) int {
		c := RawCounter{span: span}
		for p := data; len(p) > 0; {
			n := min(len(p), chunk())
			c.Write(p[:n])
			p = p[n:]
		}
		return c.Tokens()
	}
	a := count(func() int { return 4096 }, 0)
	b := count(func() int { return 1 + r.IntN(70000) }, 0)
	if a != b {
		t.Fatalf("the same bytes counted %d and %d with other read sizes", a, b)
	}
	full := count(func() int { return 65536 }, math.MaxInt64)
	if d := math.Abs(float64(a-full)) / float64(full); d > 0.01 {
		t.Errorf("sampled estimate %d against %d estimating every byte: off by %.2f%%", a, full, 100*d)
	} else {
		t.Logf("sampled estimate %d, every byte %d (%.3f%% off)", a, full, 100*float64(a-full)/float64(full))
	}
}
