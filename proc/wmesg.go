package proc

// WaitKind is what a sleeping thread waits for, as far as the OS's wait message tells
// (FreeBSD's ki_wmesg).
type WaitKind uint8

// Kinds of WaitKind.
const (
	// WaitNone: the thread is not asleep, or its wait message is empty.
	WaitNone WaitKind = iota
	// WaitTTYRead: blocked reading a terminal ("ttyin").
	WaitTTYRead
	// WaitMultiplex: blocked in select, poll or kevent ("select", "poll", "kqread"):
	// the message does not say on which descriptors.
	WaitMultiplex
	// WaitOther: asleep on something else (a timer, a child, a pipe, a socket, a lock).
	WaitOther
)

// waitKindOf classifies a FreeBSD wait message.
func waitKindOf(msg string) WaitKind {
	switch msg {
	case "":
		return WaitNone
	case "ttyin":
		return WaitTTYRead
	case "select", "poll", "kqread":
		return WaitMultiplex
	}
	return WaitOther
}
