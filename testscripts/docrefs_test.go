package testscripts

import (
	"bufio"
	"bytes"
	"fmt"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestDocRefs keeps the repository self-contained: what its code and
// documents cite must resolve inside it. It walks the repository's *.go,
// *.md, *.txtar and *.sh files (and Makefiles), skipping .cache, bin,
// node_modules and .git, and reports, as file:line,
//
//   - a requirement id (FR-x.y, NFR-x, X-x) that docs/requirements.md does
//     not define, as a heading or as a "- **FR-x.y**" item;
//   - a link to a Markdown file under docs/ (or, in a Markdown file, a
//     relative link) whose file does not exist, or whose #anchor no heading
//     of that file produces (GitHub's rule, see anchor);
//   - a comment that points outside the repository (see outsideRefs): into
//     the shared folder beside it, to a seed document, into its notes
//     folder, or to the Codex wire notes. In Go files only comments are
//     checked; in the other files every line (in .txtar files, the #
//     comment lines).
//
// It reads files only: no network, no build.
func TestDocRefs(t *testing.T) {
	t.Run("anchor", testAnchorRule)

	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	reqPath := filepath.Join(root, "docs", "requirements.md")
	defined, err := definedIDs(reqPath)
	if err != nil {
		t.Fatalf("reading the requirements: %v", err)
	}
	if len(defined) == 0 {
		t.Fatalf("%s defines no requirement ids", reqPath)
	}
	c := &docChecker{root: root, defined: defined, anchors: map[string]map[string]bool{}}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".cache", "bin", "node_modules", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		kind := fileKind(d.Name())
		if kind == "" || !d.Type().IsRegular() {
			return nil
		}
		files++
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		c.check(path, kind, data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 10 {
		t.Fatalf("only %d files checked under %s: wrong root?", files, root)
	}
	for _, p := range c.problems {
		t.Error(p)
	}
}

// fileKind is the kind of file the test checks ("" for none).
func fileKind(name string) string {
	if name == "Makefile" {
		return "make"
	}
	switch ext := filepath.Ext(name); ext {
	case ".go", ".md", ".txtar", ".sh":
		return ext[1:]
	}
	return ""
}

var (
	// idRE matches a requirement id as the repository cites it.
	idRE = regexp.MustCompile(`\b(?:N?FR|X)-[0-9]+(?:\.[0-9]+)*`)
	// docLinkRE matches a reference to a document under docs/, with its
	// optional anchor.
	docLinkRE = regexp.MustCompile(`\bdocs/([A-Za-z0-9_.-]+\.md)(?:#([A-Za-z0-9_-]*))?`)
	// mdLinkRE matches the target of a Markdown link.
	mdLinkRE = regexp.MustCompile(`\]\(([^)\s]*)\)`)
	// headingRE matches an ATX heading and captures its text.
	headingRE = regexp.MustCompile(`^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$`)
	// defineItemRE matches a list item that defines an id: "- **FR-1.2**".
	defineItemRE = regexp.MustCompile(`^\s*[-*]\s+\*\*((?:N?FR|X)-[0-9]+(?:\.[0-9]+)*)\*\*`)
	// fenceRE matches the fence of a Markdown code block.
	fenceRE = regexp.MustCompile("^ {0,3}(```|~~~)")
)

// outsideRefs are the comment texts that point outside the repository.
var outsideRefs = []struct {
	what string
	re   *regexp.Regexp
}{
	{"a path into ../shared", regexp.MustCompile(`\.\./shared\b|/work/shared\b`)},
	{"a seed document", regexp.MustCompile(`(?i)\bseeds?\s*(?:doc(?:ument)?\s*)?#?\s*00[0-9]`)},
	{"a notes/ path", regexp.MustCompile(`(?i)\bnotes/`)},
	{"the codex-wire notes", regexp.MustCompile(`(?i)codex-wire\s+notes`)},
}

// docChecker collects the problems of the files it is given.
type docChecker struct {
	root     string
	defined  map[string]bool
	anchors  map[string]map[string]bool // file → its anchors; nil: no such file
	problems []string
}

func (c *docChecker) report(path string, line int, format string, args ...any) {
	rel, err := filepath.Rel(c.root, path)
	if err != nil {
		rel = path
	}
	c.problems = append(c.problems, fmt.Sprintf("%s:%d: %s", filepath.ToSlash(rel), line, fmt.Sprintf(format, args...)))
}

// check checks one file of the given kind.
func (c *docChecker) check(path, kind string, data []byte) {
	lines := strings.Split(string(data), "\n")
	inFence := false
	for i, line := range lines {
		n := i + 1
		for _, id := range idRE.FindAllString(line, -1) {
			if !c.defined[id] {
				c.report(path, n, "%s is not defined in docs/requirements.md", id)
			}
		}
		for _, m := range docLinkRE.FindAllStringSubmatch(line, -1) {
			c.checkTarget(path, n, filepath.Join(c.root, "docs", m[1]), "docs/"+m[1], m[2], strings.Contains(m[0], "#"))
		}
		if kind == "md" {
			if fenceRE.MatchString(line) {
				inFence = !inFence
			}
			if !inFence {
				c.checkMarkdownLinks(path, n, line)
			}
		}
		switch kind {
		case "go": // comments only, below
		case "txtar":
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				c.checkOutside(path, n, line)
			}
		default:
			c.checkOutside(path, n, line)
		}
	}
	if kind == "go" {
		c.checkGoComments(path, data)
	}
}

// checkMarkdownLinks checks the relative link targets of a Markdown line.
func (c *docChecker) checkMarkdownLinks(path string, n int, line string) {
	for _, m := range mdLinkRE.FindAllStringSubmatch(line, -1) {
		target := m[1]
		if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		file, anchor, hasAnchor := strings.Cut(target, "#")
		abs := path
		if file != "" {
			if strings.HasPrefix(file, "/") {
				abs = filepath.Join(c.root, filepath.FromSlash(file))
			} else {
				abs = filepath.Join(filepath.Dir(path), filepath.FromSlash(file))
			}
		}
		if !strings.HasSuffix(abs, ".md") {
			if _, err := os.Stat(abs); err != nil {
				c.report(path, n, "link to %s: no such file", target)
			}
			continue
		}
		c.checkTarget(path, n, abs, target, anchor, hasAnchor)
	}
}

// checkTarget checks that the Markdown file doc exists and, when the
// reference has an anchor, that one of its headings produces it.
func (c *docChecker) checkTarget(path string, n int, doc, shown, anchor string, hasAnchor bool) {
	anchors := c.anchorsOf(doc)
	switch {
	case anchors == nil:
		c.report(path, n, "%s: no such file", shown)
	case hasAnchor && !anchors[anchor]:
		c.report(path, n, "%s: no heading of %s has the anchor #%s", shown, filepath.Base(doc), anchor)
	}
}

// checkOutside reports a comment text that points outside the repository.
func (c *docChecker) checkOutside(path string, n int, text string) {
	for _, r := range outsideRefs {
		if loc := r.re.FindStringIndex(text); loc != nil {
			c.report(path, n, "points outside the repository (%s: %q); cite docs/requirements.md or docs/codex-wire.md instead",
				r.what, text[loc[0]:loc[1]])
		}
	}
}

// checkGoComments applies checkOutside to every line of every comment of a
// Go file.
func (c *docChecker) checkGoComments(path string, src []byte) {
	fset := token.NewFileSet()
	file := fset.AddFile(path, -1, len(src))
	var s scanner.Scanner
	s.Init(file, src, func(token.Position, string) {}, scanner.ScanComments) // a file being edited may not scan cleanly
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			return
		}
		if tok != token.COMMENT {
			continue
		}
		line := fset.Position(pos).Line
		for i, l := range strings.Split(lit, "\n") {
			c.checkOutside(path, line+i, l)
		}
	}
}

// anchorsOf returns the anchors of a Markdown file's headings, or nil when
// the file does not exist.
func (c *docChecker) anchorsOf(path string) map[string]bool {
	if a, ok := c.anchors[path]; ok {
		return a
	}
	var a map[string]bool
	if data, err := os.ReadFile(path); err == nil {
		a = map[string]bool{}
		for _, h := range headings(data) {
			a[h] = true
		}
	}
	c.anchors[path] = a
	return a
}

// headings returns the anchors of a Markdown document's headings, in order,
// with GitHub's suffixes for repeated ones ("-1", "-2", ...). Headings in
// code blocks do not count.
func headings(data []byte) []string {
	var out []string
	seen := map[string]int{}
	inFence := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if fenceRE.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		m := headingRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := anchor(m[1])
		if k := seen[slug]; k > 0 {
			seen[slug] = k + 1
			slug = fmt.Sprintf("%s-%d", slug, k)
		} else {
			seen[slug] = 1
		}
		out = append(out, slug)
	}
	return out
}

// mdInlineLinkRE matches an inline link or image, to keep only its text.
var mdInlineLinkRE = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)

// anchor returns the anchor GitHub gives a heading: the heading's text
// (a link reduced to its text) in lower case, with each space replaced by
// "-" and every character other than letters, digits, "-" and "_" dropped.
func anchor(heading string) string {
	heading = mdInlineLinkRE.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// definedIDs returns the requirement ids a requirements document defines:
// a heading that starts with the id, or a list item whose first word is the
// id in bold.
func definedIDs(path string) (map[string]bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if m := headingRE.FindStringSubmatch(line); m != nil {
			if id := idRE.FindString(m[1]); id != "" && strings.HasPrefix(m[1], id) {
				ids[id] = true
			}
			continue
		}
		if m := defineItemRE.FindStringSubmatch(line); m != nil {
			ids[m[1]] = true
		}
	}
	return ids, nil
}

// testAnchorRule checks anchor, headings and the comment patterns against
// known cases.
func testAnchorRule(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"FR-17", "fr-17"},
		{"NFR-6", "nfr-6"},
		{"Stale listener", "stale-listener"},
		{"mcp-server vs app-server", "mcp-server-vs-app-server"},
		{"`thread/start` params", "threadstart-params"},
		{"A.8 Approval Flow (elicitation)", "a8-approval-flow-elicitation"},
		{"Links [to docs](docs/requirements.md) & more", "links-to-docs--more"},
		{"snake_case and Ünïcode", "snake_case-and-ünïcode"},
	} {
		if got := anchor(tc.heading); got != tc.want {
			t.Errorf("anchor(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
	doc := "# Title\n## Same\n```\n## Not a heading\n```\n## Same\n### Same ###\n"
	if got, want := strings.Join(headings([]byte(doc)), " "), "title same same-1 same-2"; got != want {
		t.Errorf("headings = %q, want %q", got, want)
	}
	for _, tc := range []struct {
		text    string
		outside bool
	}{
		{"// see ../shared/notes/codex.md", true},
		{"// as seed 000 §9 says", true},
		{"// the seed's default", false},
		{"// the codex-wire notes, section 2", true},
		{"// transcripts in notes/codex-wire", true},
		{"// docs/codex-wire.md#stale-listener", false},
		{"// seeded with Seed", false},
		{"// notes that data was parsed", false},
	} {
		c := &docChecker{root: "/"}
		c.checkOutside("/x.go", 1, tc.text)
		if got := len(c.problems) > 0; got != tc.outside {
			t.Errorf("checkOutside(%q) reported %v, want %v", tc.text, c.problems, tc.outside)
		}
	}
}

// TestREADMEForUsers: the README is written for users, in the order they
// need it, and short enough to read (the lab notes live in docs/).
func TestREADMEForUsers(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if n := utf8.RuneCountInString(s); n >= 15000 {
		t.Errorf("the README is %d characters, want under 15,000", n)
	}
	at := -1
	for _, h := range []string{"## Install", "## Prerequisites", "## Register with Claude Code", "## A first conversation", "## Tools",
		"## Configuration", "## Troubleshooting", "## Development", "make demo   #", "make test   #", "## Performance"} {
		i := strings.Index(s, h)
		if i < 0 || i < at {
			t.Errorf("%q is missing or out of order", h)
		}
		at = i
	}
}
