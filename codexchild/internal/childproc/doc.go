// Package childproc supervises every child process of the codexchild
// module, whatever it speaks: the Codex child (codexchild's core), an ACP
// agent (codexchild/acp), a tool server served over http, the probes of
// the auto selection.
//
// [Start] runs a command ([Config]: a [Spec], where it runs, the guard)
// in a process group of its own, as gopls's internal/gocommand does:
// exec.CommandContext with Cancel sending SIGTERM to the group and
// WaitDelay as the hard stop. The owner writes the child's stdin
// ([Process.Write]: without a deadline while the pipe takes the bytes at
// once, under Config.WriteTimeout when it is full, after which the child
// is killed) and reads its stdout to the end ([Process.Stdout], then
// [Process.StdoutDone]); the supervisor drains its stderr into the log,
// line by line, terminal escapes stripped, at the level
// Config.StderrLevel gives, and keeps the last lines. [Process.Stop] ends
// it gracefully (stdin closed, SIGTERM to the group after a grace, SIGKILL
// after another); [Process.Kill] ends a broken one at once and records
// why ([Because]). Once the leader has exited, whatever is left of its
// group is killed. [Output] runs a command to its end and returns its
// stdout, under the same supervision.
//
// How a child died is an *[ExitError]: its [ExitStatus] (exit code, or
// signal, and the reason when the supervisor killed it), its last stderr
// lines, and the cause of the kill. The sentinels are one set for every
// child: [ErrExited] underneath every *ExitError, [ErrNotJSONRPC] and
// [ErrStdinBlocked] underneath the causes the supervisor and the readers
// give; codexchild and codexchild/acp export the same values, and their
// own exit errors unwrap to them, so errors.Is works across both.
// Messages name the child as the caller does (Config.Name: "codex child",
// "claude agent"), never "codex" for another agent.
//
// [Garbage] is the readers' limiter for lines of a child's stdout that
// are not JSON-RPC: a few logged per window, the rest counted, and a
// child that writes [MaxGarbageRun] of them in a row is broken
// ([Garbage.Err] is the cause to kill it with, saying how many lines).
//
// Where a child runs is a seam: [Config].Launch turns the command asked
// for into the one to start here ([Launcher]). Nothing uses it yet; a
// child on another machine would be `ssh -T host -- <command>`, started
// and supervised the same way (ssh passes stdin's end and the exit status
// on), the guard and the process group being this machine's. Because
// [Spec].Env is a whole environment, the caller also says what it added
// (Spec.AddEnv): that is all a launcher for another machine passes on,
// and it may pass it in a preamble that Start writes to stdin first
// (Spec.Stdin) rather than on a command line that every user of the host
// can read.
//
// On Linux a guarded child (Config.Guard: codexchild/guard's Main) gets a
// parent-death signal and is forked from a thread that lives as long as
// the process ([StartFromLastingThread], [SetParentDeathSignal]).
//
// Locks: Process.mu guards the stderr tail, the kill's cause, whether
// Wait has returned and the exit status; it is a leaf, held across no I/O
// and no signal. A Process's stdin has one writer at a time (the owner
// serialises writes).
package childproc
