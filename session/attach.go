package session

// attachState will track the human clients attached to a session (issue 3).
type attachState struct{}

func (a *attachState) attached() bool        { return false }
func (a *attachState) takeInputBytes() int64 { return 0 }
