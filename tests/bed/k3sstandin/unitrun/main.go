// Command unitrun is the part of the test hosts' systemctl stand-in
// (../systemctl.sh) that a shell cannot do: it runs a service from the unit
// file k3s's install.sh wrote, as systemd's service manager does, and
// receives the service's readiness over NOTIFY_SOCKET (Type=notify).
//
//	unitrun listen <socket> <state-file> <journal> <unit>
//	                                      bind a datagram socket; at READY=1
//	                                      mark the unit active and journal
//	                                      systemd's "Started" line
//	unitrun exec <unit-file>              run the unit's ExecStartPre lines,
//	                                      then become its ExecStart
//
// As systemd (src/core/execute.c, exec_child; src/core/load-fragment.c and
// src/basic/extract-word.c for the syntax): the environment is systemd's
// own (PATH, LANG, NOTIFY_SOCKET) plus Environment= and each
// EnvironmentFile= in order ("-" before the path: a missing file is no
// error); the working directory is /, the umask 022; Limit*= are applied
// as far as this machine allows (systemd, as PID 1, always can); an
// ExecStartPre= whose command fails fails the start unless it begins with
// "-" (a missing program counts as a failure); ExecStart's words are split
// with systemd's quoting ('...', "...", backslash escapes), %N and %% are
// replaced and ${NAME} and $NAME taken from the environment. INVOCATION_ID
// is left out: with it, k3s assumes systemd's cgroup driver and D-Bus.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gitops-k3s-flux/k3s_flux/internal/atomicfile"
)

func main() {
	var err error
	switch {
	case len(os.Args) == 6 && os.Args[1] == "listen":
		err = listen(os.Args[2], os.Args[3], os.Args[4], os.Args[5])
	case len(os.Args) == 3 && os.Args[1] == "exec":
		err = run(os.Args[2])
	default:
		err = errors.New("usage: unitrun listen <socket> <state-file> <journal> <unit> | unitrun exec <unit-file>")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "unitrun:", err)
		os.Exit(1)
	}
}

// listen receives sd_notify's datagrams (go-systemd's daemon.SdNotify
// dials "unixgram") until it is killed. The first READY=1 makes the unit
// active at once, as systemd's manager does when it reads the datagram
// (src/core/service.c, service_notify_message): the state file replaced
// whole, so a reader never sees it half-written, then systemd's line in the
// unit's journal. The supervisor (systemctl.sh) only waits for k3s to exit,
// and stops this process before it records anything after that.
func listen(socket, state, journal, unit string) error {
	_ = os.Remove(socket)
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: socket, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer conn.Close()
	buf := make([]byte, 4096)
	for ready := false; ; {
		n, _, err := conn.ReadFromUnix(buf)
		if err != nil {
			return err
		}
		if ready || !slices.Contains(strings.Split(string(buf[:n]), "\n"), "READY=1") {
			continue
		}
		ready = true
		if err := markActive(state, journal, unit, time.Now()); err != nil {
			return err
		}
		// For the supervisor's trail (systemctl.sh).
		fmt.Println("unitrun: READY=1 received: active")
	}
}

func markActive(state, journal, unit string, now time.Time) error {
	if err := atomicfile.Write(state, strings.NewReader("active running\n"), 0o644); err != nil {
		return err
	}
	f, err := os.OpenFile(journal, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "%d Started %s.service - Lightweight Kubernetes.\n", now.Unix(), unit)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// unit is what unitrun reads of a unit file's [Service] section.
type unit struct {
	name     string // k3s, for /etc/systemd/system/k3s.service
	env      []string
	envFiles []string
	pre      []string
	start    string
	limits   map[string]string
}

func run(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	u, err := parseUnit(strings.TrimSuffix(filepath.Base(path), ".service"), string(raw))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if u.start == "" {
		return fmt.Errorf("%s: no ExecStart", path)
	}
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "HOME=/root", "USER=root", "LOGNAME=root"}
	if s := os.Getenv("NOTIFY_SOCKET"); s != "" {
		env = append(env, "NOTIFY_SOCKET="+s)
	}
	env = append(env, u.env...)
	for _, f := range u.envFiles {
		optional := strings.HasPrefix(f, "-")
		f = strings.TrimPrefix(f, "-")
		content, err := os.ReadFile(f)
		if err != nil {
			if optional && errors.Is(err, os.ErrNotExist) {
				continue
			}
			return fmt.Errorf("failed to load environment files: %w", err)
		}
		vars, err := parseEnvFile(string(content))
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		env = append(env, vars...)
	}
	// A real k3s server run without its agent (the test bed's, with
	// disable-agent): NODE_NAME, which k3s's agent sets in the server's
	// process (pkg/agent/config/config.go, get: os.Setenv("NODE_NAME", ...))
	// and its secrets-encrypt handlers read (pkg/server/handlers/
	// secrets-encrypt.go), from the systemctl stand-in.
	if name := os.Getenv("TESTBED_NODE_NAME"); name != "" {
		env = append(env, "NODE_NAME="+name)
	}
	setLimits(u.limits)
	syscall.Umask(0o022)
	if err := os.Chdir("/"); err != nil {
		return err
	}
	lookup := envLookup(env)
	for _, line := range u.pre {
		ignore := strings.HasPrefix(line, "-")
		argv, err := execWords(strings.TrimLeft(line, "-@:+!"), u.name, lookup)
		if err != nil {
			return err
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil && !ignore {
			return fmt.Errorf("ExecStartPre %s: %w", argv[0], err)
		}
	}
	argv, err := execWords(strings.TrimLeft(u.start, "-@:+!"), u.name, lookup)
	if err != nil {
		return err
	}
	return syscall.Exec(argv[0], argv, env)
}

// parseUnit reads the [Service] keys unitrun uses. A line ending in a
// backslash goes on with the next (the backslash read as a space); comment
// lines inside it are skipped and an empty line ends it.
func parseUnit(name, text string) (unit, error) {
	u := unit{name: name, limits: map[string]string{}}
	section := ""
	var logical []string
	var cur strings.Builder
	cont := false
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if cont {
			if trimmed == "" {
				logical = append(logical, cur.String())
				cur.Reset()
				cont = false
				continue
			}
			if strings.HasPrefix(trimmed, "#") || strings.HasPrefix(trimmed, ";") {
				continue
			}
		}
		if !cont && (trimmed == "" || strings.HasPrefix(trimmed, "#") || strings.HasPrefix(trimmed, ";")) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\"))
			cur.WriteString(" ")
			cont = true
			continue
		}
		cur.WriteString(trimmed)
		logical = append(logical, cur.String())
		cur.Reset()
		cont = false
	}
	if cont {
		logical = append(logical, cur.String())
	}
	for _, l := range logical {
		if strings.HasPrefix(l, "[") {
			section = strings.Trim(l, "[] ")
			continue
		}
		if section != "Service" {
			continue
		}
		key, value, ok := strings.Cut(l, "=")
		if !ok {
			return u, fmt.Errorf("not a key=value line: %q", l)
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		switch {
		case key == "ExecStart":
			u.start = value
		case key == "ExecStartPre":
			u.pre = append(u.pre, value)
		case key == "EnvironmentFile":
			u.envFiles = append(u.envFiles, specifiers(value, name))
		case key == "Environment":
			words, err := splitWords(value)
			if err != nil {
				return u, fmt.Errorf("Environment=%s: %w", value, err)
			}
			u.env = append(u.env, words...)
		case strings.HasPrefix(key, "Limit"):
			u.limits[key] = value
		}
	}
	return u, nil
}

// specifiers replaces the unit specifiers the k3s units use.
func specifiers(s, name string) string {
	return strings.NewReplacer("%%", "%", "%N", name, "%n", name+".service").Replace(s)
}

// execWords splits a command line as systemd does and substitutes
// variables: "${NAME}" within a word, "$NAME" as a whole word split on
// whitespace.
func execWords(line, name string, lookup func(string) string) ([]string, error) {
	words, err := splitWords(specifiers(line, name))
	if err != nil {
		return nil, err
	}
	var argv []string
	for _, w := range words {
		if strings.HasPrefix(w, "$") && !strings.HasPrefix(w, "${") && !strings.HasPrefix(w, "$$") && len(w) > 1 {
			argv = append(argv, strings.Fields(lookup(w[1:]))...)
			continue
		}
		argv = append(argv, os.Expand(strings.ReplaceAll(w, "$$", "\x00"), func(k string) string { return lookup(k) }))
	}
	for i := range argv {
		argv[i] = strings.ReplaceAll(argv[i], "\x00", "$")
	}
	if len(argv) == 0 {
		return nil, errors.New("empty command line")
	}
	if !filepath.IsAbs(argv[0]) {
		return nil, fmt.Errorf("%s: not an absolute path", argv[0])
	}
	return argv, nil
}

// splitWords splits on whitespace; '...' and "..." quote, a backslash
// escapes the next character (C escapes \n \t among them).
func splitWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	var quote rune
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '\\':
			if i+1 >= len(rs) {
				return nil, errors.New("trailing backslash")
			}
			i++
			switch rs[i] {
			case 'n':
				w.WriteRune('\n')
			case 't':
				w.WriteRune('\t')
			default:
				w.WriteRune(rs[i])
			}
			inWord = true
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				w.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, errors.New("unbalanced quotes")
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// parseEnvFile reads NAME=value lines as systemd's environment files:
// comments and empty lines skipped, a value's quoted parts ('...' as
// written, "..." with backslash escapes) joined with its unquoted ones.
func parseEnvFile(text string) ([]string, error) {
	var vars []string
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			continue // systemd ignores it, with a warning
		}
		var v bytes.Buffer
		var quote byte
		for i := 0; i < len(value); i++ {
			c := value[i]
			switch {
			case quote == '\'':
				if c == '\'' {
					quote = 0
				} else {
					v.WriteByte(c)
				}
			case c == '\\' && i+1 < len(value):
				i++
				v.WriteByte(value[i])
			case quote == '"':
				if c == '"' {
					quote = 0
				} else {
					v.WriteByte(c)
				}
			case c == '\'' || c == '"':
				quote = c
			default:
				v.WriteByte(c)
			}
		}
		if quote != 0 {
			return nil, fmt.Errorf("%s: unbalanced quotes", strings.TrimSpace(name))
		}
		vars = append(vars, strings.TrimSpace(name)+"="+strings.TrimRight(v.String(), " \t"))
	}
	return vars, sc.Err()
}

func envLookup(env []string) func(string) string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return func(k string) string { return m[k] }
}

var rlimits = map[string]int{"LimitNOFILE": syscall.RLIMIT_NOFILE, "LimitCORE": syscall.RLIMIT_CORE, "LimitNPROC": 6}

// setLimits raises what it can: a test host cannot go above this
// machine's hard limits (no CAP_SYS_RESOURCE here), which systemd as PID 1
// would; lower, the service runs as on a real node.
func setLimits(limits map[string]string) {
	for key, value := range limits {
		res, ok := rlimits[key]
		if !ok {
			continue
		}
		var cur syscall.Rlimit
		if syscall.Getrlimit(res, &cur) != nil {
			continue
		}
		want := ^uint64(0)
		if value != "infinity" {
			n, err := strconv.ParseUint(value, 10, 64)
			if err != nil {
				continue
			}
			want = n
		}
		lim := syscall.Rlimit{Cur: min(want, cur.Max), Max: cur.Max}
		if want <= cur.Max {
			lim.Max = want
		}
		_ = syscall.Setrlimit(res, &lim)
	}
}
