# Measures terminal-query round trips from the program's side: it sends ESC[6n and
# times until the answer arrives. Used by BenchmarkScreenQueryLatency.
import os, sys, time, termios, tty

n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
flood = int(sys.argv[2]) if len(sys.argv) > 2 else 0
old = termios.tcgetattr(0)
tty.setraw(0)
ts = []
for i in range(n):
    if flood:
        chunk = b"a" * 65536
        for _ in range(flood // len(chunk)):
            os.write(1, chunk)
    t = time.perf_counter()
    os.write(1, b"\x1b[6n")
    buf = b""
    while not buf.endswith(b"R"):
        buf += os.read(0, 64)
    ts.append(time.perf_counter() - t)
termios.tcsetattr(0, termios.TCSADRAIN, old)
ts.sort()
print("\r\nRESULT median_us=%d p90_us=%d max_us=%d n=%d" % (ts[len(ts) // 2] * 1e6, ts[len(ts) * 9 // 10] * 1e6, ts[-1] * 1e6, n))
