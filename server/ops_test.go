package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"net"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/quick"

	"golang.org/x/sys/unix"

	"github.com/ptyhub/ptyhub/session"
)

// echoService is a session.Service and session.Asker that records the method called and
// its request, and answers what the test set: res (a pointer to that method's result
// type) or err.
type echoService struct {
	mu     sync.Mutex
	method string
	req    any
	res    any
	err    error
}

func answer[Res any](e *echoService, method string, req any) (*Res, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.method, e.req = method, req
	if e.err != nil {
		return nil, e.err
	}
	r, _ := e.res.(*Res)
	return r, nil
}

func (e *echoService) set(res any, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.method, e.req, e.res, e.err = "", nil, res, err
}

func (e *echoService) got() (string, any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.method, e.req
}

func (e *echoService) Exec(_ context.Context, r session.ExecRequest) (*session.Result, error) {
	return answer[session.Result](e, "Exec", r)
}
func (e *echoService) Write(_ context.Context, r session.WriteRequest) (*session.Result, error) {
	return answer[session.Result](e, "Write", r)
}
func (e *echoService) Read(_ context.Context, r session.ReadRequest) (*session.Result, error) {
	return answer[session.Result](e, "Read", r)
}
func (e *echoService) List(context.Context) (*session.ListResult, error) {
	return answer[session.ListResult](e, "List", nil)
}
func (e *echoService) Kill(_ context.Context, r session.KillRequest) (*session.KillResult, error) {
	return answer[session.KillResult](e, "Kill", r)
}
func (e *echoService) Resize(_ context.Context, r session.ResizeRequest) (*session.ResizeResult, error) {
	return answer[session.ResizeResult](e, "Resize", r)
}
func (e *echoService) Wait(_ context.Context, r session.WaitRequest) (*session.WaitResult, error) {
	return answer[session.WaitResult](e, "Wait", r)
}
func (e *echoService) Watch(_ context.Context, r session.WatchRequest) (*session.WatchResult, error) {
	return answer[session.WatchResult](e, "Watch", r)
}
func (e *echoService) AskHuman(_ context.Context, r session.AskRequest) (*session.AskResult, error) {
	return answer[session.AskResult](e, "AskHuman", r)
}

// opsClient returns a Client whose requests the server's request loop (serveRequests)
// serves on svc, across a Unix socket pair.
func opsClient(t *testing.T, svc session.Service) *Client {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	conns := make([]net.Conn, 2)
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "socketpair")
		conns[i], err = net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	s := &Server{log: slog.New(slog.DiscardHandler)}
	served := make(chan struct{})
	// The server's side: owned by the test, ends when the client says bye or closes.
	go func() {
		defer close(served)
		defer conns[1].Close()
		s.serveRequests(conns[1], &sender{c: conns[1]}, svc, func(bool) {})
	}()
	cl := newClient(conns[0], &Welcome{Protocol: Protocol})
	t.Cleanup(func() {
		cl.Close(context.Background(), false)
		<-served
	})
	return cl
}

// randomValue returns a random value of type ty, as testing/quick makes them.
func randomValue(t *testing.T, ty reflect.Type, rng *rand.Rand) reflect.Value {
	t.Helper()
	v, ok := quick.Value(ty, rng)
	if !ok {
		t.Fatalf("testing/quick makes no value of %v", ty)
	}
	return v
}

// sameJSONOf reports whether a and b encode to the same JSON, and the encodings.
func sameJSONOf(t *testing.T, a, b any) (bool, string, string) {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb), string(ja), string(jb)
}

// TestOpsRoundTrip: every method of session.Service and session.Asker is a registered
// operation. Called on a Client, it reaches the same method of the service behind the
// server, with the request it was given (random values of every field), and returns the
// result that method returned, or its error with the same message, the same session
// sentinel and the same *session.ArgError.
func TestOpsRoundTrip(t *testing.T) {
	t.Parallel()
	e := &echoService{}
	cl := opsClient(t, e)
	client := reflect.ValueOf(cl)
	rng := rand.New(rand.NewSource(1))
	// The errors the service returns, as the engine words them: none of the session
	// sentinels, each of them, an argument's.
	arg := &session.ArgError{Arg: "rows", Problem: " must be 1 to 1000", Other: "cols", After: " too"}
	errs := []error{errors.New("the service broke")}
	for _, k := range kinds {
		errs = append(errs, fmt.Errorf("%w: %s", k.err, k.name))
	}
	errs = append(errs, arg, fmt.Errorf("resize: %w", arg))
	for _, iface := range []reflect.Type{reflect.TypeFor[session.Service](), reflect.TypeFor[session.Asker]()} {
		for i := range iface.NumMethod() {
			m := iface.Method(i)
			t.Run(m.Name, func(t *testing.T) {
				call := client.MethodByName(m.Name)
				for n := range 2 * len(errs) {
					args := []reflect.Value{reflect.ValueOf(t.Context())}
					for j := 1; j < m.Type.NumIn(); j++ {
						args = append(args, randomValue(t, m.Type.In(j), rng))
					}
					res := reflect.New(m.Type.Out(0).Elem())
					res.Elem().Set(randomValue(t, res.Elem().Type(), rng))
					var wantErr error
					if n%2 == 1 {
						wantErr = errs[n/2]
					}
					e.set(res.Interface(), wantErr)
					out := call.Call(args)
					method, req := e.got()
					if method != m.Name {
						t.Fatalf("Client.%s reached the service's method %q", m.Name, method)
					}
					if len(args) > 1 {
						if same, sent, got := sameJSONOf(t, args[1].Interface(), req); !same {
							t.Fatalf("request sent:\n%s\nrequest served:\n%s", sent, got)
						}
					}
					err, _ := out[1].Interface().(error)
					if wantErr == nil {
						if err != nil {
							t.Fatal(err)
						}
						if same, want, got := sameJSONOf(t, res.Interface(), out[0].Interface()); !same {
							t.Fatalf("result returned:\n%s\nresult received:\n%s", want, got)
						}
						continue
					}
					if err == nil || err.Error() != wantErr.Error() {
						t.Fatalf("error %v, want %v", err, wantErr)
					}
					for _, k := range kinds {
						if errors.Is(err, k.err) != errors.Is(wantErr, k.err) {
							t.Fatalf("error %v: errors.Is(%v) %v, want %v", err, k.err, !errors.Is(wantErr, k.err), errors.Is(wantErr, k.err))
						}
					}
					var got, want *session.ArgError
					if errors.As(wantErr, &want) && (!errors.As(err, &got) || *got != *want) {
						t.Fatalf("error %v lost its argument %+v", err, *want)
					}
				}
			})
		}
	}
}

// TestOpsRefused: a request the table does not name, or whose body has a field its
// request type lacks, is refused as an invalid argument, and the connection serves on.
func TestOpsRefused(t *testing.T) {
	t.Parallel()
	e := &echoService{}
	cl := opsClient(t, e)
	err := cl.call(t.Context(), "nosuch", nil, nil)
	if !errors.Is(err, session.ErrInvalid) || !strings.Contains(err.Error(), `unknown request "nosuch"`) {
		t.Errorf("unknown request: %v", err)
	}
	err = cl.call(t.Context(), opKill.name, map[string]string{"session_id": "1", "sigal": "INT"}, nil)
	if !errors.Is(err, session.ErrInvalid) || !strings.Contains(err.Error(), `unknown field "sigal"`) {
		t.Errorf("unknown field: %v", err)
	}
	if m, _ := e.got(); m != "" {
		t.Errorf("a refused request reached the service's %s", m)
	}
	e.set(&session.KillResult{}, nil)
	if _, err := cl.Kill(t.Context(), session.KillRequest{SessionID: "1"}); err != nil {
		t.Errorf("kill after refusals: %v", err)
	}
}
