package k3snode

import (
	"regexp"
	"strconv"
	"strings"
)

var logMsg = regexp.MustCompile(`level=(fatal|error) msg=("(?:[^"\\]|\\.)*")`)

// FatalMessage is what k3s said when it failed: the msg of its last fatal
// or error log line (k3s's main logs a failed command as "Error: <err>"),
// else its last line of output, else how it exited.
func FatalMessage(stderr string, exit error) string {
	if m := logMsg.FindAllStringSubmatch(stderr, -1); len(m) > 0 {
		if msg, err := strconv.Unquote(m[len(m)-1][2]); err == nil {
			return strings.TrimPrefix(msg, "Error: ")
		}
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if last := strings.TrimSpace(lines[len(lines)-1]); last != "" {
		return last
	}
	return exit.Error()
}
