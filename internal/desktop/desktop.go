// Package desktop sends a desktop notification where the machine has a way to: notify-send
// on Linux and the BSDs (when it is on PATH and a display is set), osascript on macOS.
package desktop

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"time"
)

// Notify shows title and body as a desktop notification and reports whether one was
// sent. It runs the notifier (bounded to 5 s) and waits for it; it never fails the
// caller: a machine without one (a server, a container) just gets none.
func Notify(ctx context.Context, title, body string) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		p, err := exec.LookPath("osascript")
		if err != nil {
			return false
		}
		cmd = exec.CommandContext(ctx, p, "-e", "display notification "+strconv.Quote(body)+" with title "+strconv.Quote(title))
	default:
		if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" && os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
			return false
		}
		p, err := exec.LookPath("notify-send")
		if err != nil {
			return false
		}
		cmd = exec.CommandContext(ctx, p, "--app-name=ptyhub", "--", title, body)
	}
	return cmd.Run() == nil
}
