package sshhost

// The fixed POSIX sh programs run on the host. Each is the script of
// `exec /bin/sh -c <script> <$0> <arguments…>`, the only command line this
// package sends: the user's login shell on the host only has to split
// quoted words (Join), and what runs is the same sh whatever that shell
// is. Nothing but the arguments changes from one call to the next.

// runDir is where the agents' pid files live on the host, per instance:
// $HOME/.atm-agent-mcp/run/<instance>/<session>.pid.
const runDir = `${HOME:?is not set on this host}/.atm-agent-mcp/run`

// tagPrefix starts the $0 of an agent's wrapper: "atm-agent-mcp:<instance>/<session>".
// The reaper knows a wrapper by it (ps shows it), so a pid file whose pid
// was reused by another process is not acted on.
const tagPrefix = "atm-agent-mcp:"

// agentScript starts an agent: $1 instance, $2 session, $3 the working
// directory ("" for $HOME), then the program and its arguments. The
// environment to add comes first on stdin, KEY=VALUE lines ended by an
// empty line (the Launcher's preamble), so that no other user of the host
// reads it in ps. The wrapper writes its pid to the session's pid file,
// runs the agent as its child (in the process group sshd made for the
// session) and removes the file when the agent ends; the agent's exit
// status is the wrapper's.
const agentScript = `while IFS= read -r kv && [ -n "$kv" ]; do export "$kv" || exit 124; done
d="` + runDir + `/$1"; p="$d/$2.pid"
mkdir -p "$d" || exit 124
cd "${3:-${HOME:-/}}" 2>/dev/null || { echo "atm-agent-mcp: no directory ${3:-$HOME} on this host" >&2; exit 125; }
shift 3
echo "$$" >"$p" || exit 124
trap 'rm -f "$p"; exit 143' TERM
trap 'rm -f "$p"; exit 129' HUP
trap 'rm -f "$p"; exit 130' INT
"$@"
s=$?
rm -f "$p"
exit "$s"`

// execScript runs a command to its end for Exec: $1 the instance ("" for
// none), $2 the session, $3 the working directory ("" for $HOME), then the
// program and its arguments. The environment to add comes first on stdin
// (as agentScript's), the rest of stdin is the command's. With an
// instance, the wrapper keeps the session's pid file while the command
// runs (as agentScript does), so that Reap stops a command whose ssh was
// cut off; without one it only runs it.
const execScript = `while IFS= read -r kv && [ -n "$kv" ]; do export "$kv" || { echo "atm-agent-mcp: cannot set the environment on this host" >&2; exit 124; }; done
cd "${3:-${HOME:-/}}" 2>/dev/null || { echo "atm-agent-mcp: no directory ${3:-$HOME} on this host" >&2; exit 125; }
if [ -z "$1" ]; then shift 3; exec "$@"; fi
d="` + runDir + `/$1"; p="$d/$2.pid"
[ -d "$d" ] || mkdir -p "$d" || { echo "atm-agent-mcp: cannot make $d on this host" >&2; exit 124; }
shift 3
echo "$$" >"$p" || { echo "atm-agent-mcp: cannot write $p on this host" >&2; exit 124; }
trap 'rm -f "$p"; exit 143' TERM
trap 'rm -f "$p"; exit 129' HUP
trap 'rm -f "$p"; exit 130' INT
"$@"
s=$?
rm -f "$p"
exit "$s"`

// runScript runs a command to its end: $1 the working directory ("" for
// $HOME), then the program and its arguments.
const runScript = `cd "${1:-${HOME:-/}}" 2>/dev/null || { echo "atm-agent-mcp: no directory ${1:-$HOME} on this host" >&2; exit 125; }
shift
exec "$@"`

// reapScript stops the agents of an instance: $1 the instance, $2 the
// grace in tenths of a second, $3 one session only (optional: "" is every
// session of the instance). For each pid file whose process is still
// that session's wrapper (its command line has the tag), it sends SIGTERM
// to the process group, says "stopped <session> <pid>", and removes the
// file (a file whose process is gone or someone else's is only removed);
// the groups still alive after the grace get SIGKILL.
const reapScript = `d="` + runDir + `/$1"
[ -d "$d" ] || exit 0
groups=
for f in "$d"/*.pid; do
  [ -f "$f" ] || continue
  s=${f##*/}; s=${s%.pid}
  [ -z "$3" ] || [ "$s" = "$3" ] || continue
  pid=; read -r pid <"$f"
  case "$pid" in ""|*[!0-9]*) rm -f "$f"; continue;; esac
  if ps -ww -o args= -p "$pid" 2>/dev/null | grep -F -q -e "` + tagPrefix + `$1/$s "; then
    pg=$(ps -o pgid= -p "$pid" | tr -d ' ')
    case "$pg" in ""|*[!0-9]*|0|1) ;; *) kill -s TERM -- "-$pg" 2>/dev/null; groups="$groups $pg";; esac
    echo "stopped $s $pid"
  fi
  rm -f "$f"
done
[ -n "$groups" ] || exit 0
i=0
while [ "$i" -lt "$2" ]; do
  alive=
  for pg in $groups; do kill -s 0 -- "-$pg" 2>/dev/null && alive=1; done
  [ -n "$alive" ] || exit 0
  sleep 0.1
  i=$((i+1))
done
for pg in $groups; do kill -s KILL -- "-$pg" 2>/dev/null; done
exit 0`

// remote is the command line that runs script on the host with $0 and
// args.
func remote(script, zero string, args ...string) string {
	return Join(append([]string{"exec", "/bin/sh", "-c", script, zero}, args...)...)
}
