package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/config"
)

// BuildVersion is the release version, set by release builds with
// -ldflags "-X github.com/atm-agent-mcp/atm-agent-mcp/agentmcp/internal/cli.BuildVersion=v1.2.3".
// See [Version].
var BuildVersion string

// Exit codes.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

const description = `atm-agent-mcp runs OpenAI Codex agents as named members of an ATM team.

Claude (or any MCP client) starts "atm-agent-mcp serve" over stdio. The proxy runs one Codex child, gives every Codex session an agent_id and a team identity, injects team and repository context into its turns, offers team mail tools (atm_send, atm_read, atm_broadcast, atm_pending_count), turns incoming mail into turns, and keeps a session registry so sessions can be listed, summarised and resumed.

Configuration comes from flags, then ATM_AGENT_MCP_* variables, then [plugins.atm-agent-mcp] in .atm.toml (nearest, up to the git root) and ~/.config/atm/config.toml, then defaults. "atm-agent-mcp config" shows every value and where it came from.`

// app is the kong grammar.
type app struct {
	Version kong.VersionFlag `help:"Print the version and exit."`

	Serve     serveCmd     `cmd:"" help:"Run the MCP proxy on stdin/stdout (what Claude starts)."`
	Tools     toolsCmd     `cmd:"" help:"Run the tools-only MCP server of one Codex thread (Codex starts it; not for people)." hidden:""`
	Config    configCmd    `cmd:"" help:"Show the resolved configuration and where every value came from."`
	Sessions  sessionsCmd  `cmd:"" help:"List (or prune) the sessions of every proxy instance of the team."`
	Summary   summaryCmd   `cmd:"" help:"Print the saved summary of a session."`
	Worktrees worktreesCmd `cmd:"" help:"List (or prune) the git worktrees of the team's isolated agents."`
	Doctor    doctorCmd    `cmd:"" help:"Check what serve needs (team, identity, Codex, its login, bubblewrap, configuration) and how to fix what is missing."`
	View      viewCmd      `cmd:"" help:"Serve a live page of every agent of the team on 127.0.0.1 (approve or deny their requests there)."`
	Status    statusCmd    `cmd:"" help:"Print every agent of the team: state, what it does now, tokens, cost, mail, approvals (--watch to follow)."`

	PluginVersion pluginVersionCmd `cmd:"" name:"plugin-version" help:"Print the version of the Claude Code plugin this binary was built with (the plugin's launcher compares it with its own)." hidden:""`
}

// runEnv is what every command's Run receives.
type runEnv struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	progs          Programs
}

// lookupEnv adapts getenv: an empty value counts as unset.
func (e *runEnv) lookupEnv(k string) (string, bool) {
	v := e.getenv(k)
	return v, v != ""
}

// load resolves the configuration for a command.
func (e *runEnv) load(flags config.Flags, checkFiles bool) (*config.Config, error) {
	return config.Load(config.LoadOptions{Flags: flags, Env: e.lookupEnv, CheckFiles: checkFiles})
}

// warn prints configuration warnings to stderr.
func (e *runEnv) warn(cfg *config.Config) {
	for _, w := range cfg.Warnings {
		fmt.Fprintf(e.stderr, "atm-agent-mcp: warning: %s\n", w)
	}
}

// usageError is a mistake in how the command was called (exit 2).
type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

// exitPanic carries kong's exit code out of Parse.
type exitPanic int

// Run runs the atm-agent-mcp command line with args (without the program
// name) and returns the exit code: 0 on success, 1 on failure, 2 on a
// usage error (bad flags or arguments, or a flag value the configuration
// rejects). Errors go to stderr; stdout carries only the command's output.
// getenv reads the environment; an empty value counts as unset. progs are
// the MCP servers that serve and tools run.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string, progs Programs) (code int) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if len(args) == 0 {
		// No command: the help is the most useful answer, but it is still
		// a usage error and must not pollute stdout.
		parse(&app{}, []string{"--help"}, stderr, stderr)
		return ExitUsage
	}
	var grammar app
	kctx, code, ok := parse(&grammar, args, stdout, stderr)
	if !ok {
		return code
	}
	err := kctx.Run(&runEnv{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv, progs: progs})
	if err == nil {
		return ExitOK
	}
	printError(stderr, kctx.Command(), err)
	if isUsage(err) {
		return ExitUsage
	}
	return ExitFailure
}

// parse parses args; ok is false when the program should exit with code
// (help, --version, or a parse error).
func parse(grammar *app, args []string, stdout, stderr io.Writer) (kctx *kong.Context, code int, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			c, isExit := r.(exitPanic)
			if !isExit {
				panic(r)
			}
			kctx, code, ok = nil, int(c), false
		}
	}()
	parser, err := kong.New(grammar,
		kong.Name("atm-agent-mcp"),
		kong.Description(description),
		kong.Writers(stdout, stderr),
		kong.Exit(func(c int) { panic(exitPanic(c)) }),
		kong.Vars{"version": "atm-agent-mcp " + Version()},
		kong.ConfigureHelp(kong.HelpOptions{WrapUpperBound: 100, NoExpandSubcommands: true}),
	)
	if err != nil {
		panic(err) // the grammar is static: a bug
	}
	kctx, err = parser.Parse(args)
	if err != nil {
		fmt.Fprintf(stderr, "atm-agent-mcp: %v\n", err)
		fmt.Fprintf(stderr, "Run \"atm-agent-mcp --help\" or \"atm-agent-mcp <command> --help\" for usage.\n")
		return nil, ExitUsage, false
	}
	return kctx, 0, true
}

// isUsage reports whether err is the caller's mistake: a usage error or a
// bad flag value.
func isUsage(err error) bool {
	var u usageError
	if errors.As(err, &u) {
		return true
	}
	var ce *config.Error
	if errors.As(err, &ce) && ce.Source.Kind == config.SourceFlag {
		return true
	}
	return false
}

// printError writes err to w, one line per joined error.
func printError(w io.Writer, command string, err error) {
	cmd := strings.Fields(command)
	prefix := "atm-agent-mcp"
	if len(cmd) > 0 {
		prefix += " " + cmd[0]
	}
	if errs := flatten(err); len(errs) > 1 {
		fmt.Fprintf(w, "%s: %d problems:\n", prefix, len(errs))
		for _, e := range errs {
			fmt.Fprintf(w, "  %v\n", e)
		}
		return
	} else if len(errs) == 1 {
		err = errs[0]
	}
	fmt.Fprintf(w, "%s: %v\n", prefix, err)
}

// flatten expands joined errors (errors.Join, which kong also applies to
// every Run result) into their leaves. An error wrapping several others
// with its own message (fmt.Errorf with two %w) is a leaf.
func flatten(err error) []error {
	multi, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var msgs []string
	var kids []error
	for _, e := range multi.Unwrap() {
		if e != nil {
			kids = append(kids, e)
			msgs = append(msgs, e.Error())
		}
	}
	if err.Error() != strings.Join(msgs, "\n") {
		return []error{err} // not a join
	}
	var out []error
	for _, e := range kids {
		out = append(out, flatten(e)...)
	}
	return out
}

// Version returns the program version: BuildVersion when set, else the
// module version from the build information (go install …@v0.2.0), else
// for a build from a source tree its VCS revision ("devel 1a2b3c4d5e6f",
// "+dirty" when the tree was modified), else "dev".
func Version() string {
	if BuildVersion != "" {
		return BuildVersion
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	return versionOf(bi)
}

// versionOf reads the version out of build information.
func versionOf(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified == "true" {
		rev += "+dirty"
	}
	return "devel " + rev
}
