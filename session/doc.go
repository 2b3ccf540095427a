// Package session is ptyhub's engine: it runs programs on pseudo-terminals (or pipes),
// keeps their output, types into them, and tells when they exit, wait for input or print
// what a caller waits for.
//
// # Manager, Session, Client
//
// A Manager owns sessions: it starts them (through one helper process, the reaper, that
// forks every session leader and kills what they leave), keeps the table of sessions,
// their names and short ids, the per-pool limits, and the change log that Watch follows.
// Close ends every session.
//
// A Session is one program: its terminal (or pipes), the broadcast.Hub its output goes
// into, the queue of its input, its exit, and the features fed from its output (screen
// model, transcript, attached humans, shell integration, asks for a person). The agent's
// position in its output (the agent cursor, its text converter and unfinished line)
// lives here too: collects of one session are serialised, so each byte goes to exactly
// one agent call. Sessions are reached by id or name only through a Client.
//
// A Client is one caller's view of a Manager: an MCP connection, a CLI connection through
// the server, or an embedder (NewClient, NewClientFor, NewPoolClient). It implements
// Service (api.go): its sessions count in its pool, it runs in its caller's directory
// and environment (Caller), and it is told of each of its sessions that ended since its
// last call. Methods of all three are safe for concurrent use.
//
// # Goroutines: owner and end
//
// Per session, owned by the session. An idle session has one: its reader; the others run
// only while they have work.
//   - the reader (readLoop), started by the spawn, moves output into the hub; it stops at
//     EOF/EIO or when the output is closed (teardown, or the exit's grace passing while
//     something still holds the terminal);
//   - the writer (writeLoop) writes the input queue to the terminal; enqueue starts it
//     when the queue gets work and none runs, and it ends once the queue is empty or quit
//     is closed (teardown);
//   - the exit path (waitExit) is started once the leader's end is known (tellEnd): the
//     reaper reports it (reaper.Spec.OnExit), or, for a held leader, heldExits' one
//     goroutine for all sessions sees its pidfd readable (held_native.go); no goroutine
//     of the session waits meanwhile. It records the exit, waits for the output to drain,
//     and tears the session down; it ends then;
//   - the transcript recorder runs while output or events wait to be written: its first
//     run, started by startFeatures, creates the files; the reader starts the next after a
//     Write to the hub (noteOutput, recorder.kick), as do an event (input, resize, exit,
//     stopFeatures) and a Write that waits for room in the held ring; a run ends once
//     caught up with output the reader found quiet, and the last one once the output has
//     ended and it wrote what it owes;
//   - the screen's query answerer runs while there is output it has not scanned: the
//     reader starts it (noteOutput, screen.Model.Kick) when more than a small read waits
//     or a cursor position query needs the emulator (a small read is scanned, and its
//     other queries answered, by the reader itself in Kick), and it ends once caught up,
//     or at stopFeatures.
//
// Per call: Wait and Watch run one watcher goroutine per session, owned by the call and
// ended by its context (cancelled when the call returns); Manager.Close and Client.Close
// run one killer per session and wait for them. Per manager: watchReaper waits for the
// reaper's death (it ends with the reaper), and the registry's sweep of stale entries
// ends after one pass. Per process: heldExits' goroutine waits for held leaders' exits;
// it starts with the first one watched and ends once the set has stayed empty for
// heldLinger (a timer closes the set).
//
// A call never waits past its deadline on a goroutine of the session: collect (the
// follow loop in follow.go, its reading in collect.go, its decisions in the decider) is
// run by the calling goroutine itself.
//
// # Lock order
//
// The package has 16 mutexes. Where two are held at once, they are taken in this order
// (an outer one first); each is documented in this order where it is declared:
//
//  1. Session.collectMu (the agent cursor; held for a whole collect)
//  2. Client.mu (the client's ended sessions)
//  3. Manager.mu (the session table, names, pools, the change log)
//  4. Session.mu (the session's exit, owner, usage; taken under Manager.mu)
//  5. attachState.mu, then Attachment.mu (attached clients; Attachment.mu of one
//     attachment at a time)
//  6. registry.mu (the registry log; taken under Manager.mu or Session.mu)
//
// The others are leaves: nothing else is taken while one is held. They are
// Manager.rmu (the reaper and the manager's faults; taken under Client.mu), Session.qmu
// (the input queue and whether a writer runs), heldWatch.mu (the watched pidfds of held
// leaders), Session.matchMu (the patterns matched), askState.mu (a pending ask),
// recorder.mu (a transcript's queued events), recorders.mu (the live recorders),
// worldCache.mu (a client's session environments) and pruneMu (the last retention pass
// per directory).
package session
