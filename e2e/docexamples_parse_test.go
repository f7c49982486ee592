package e2e

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// docExample is one curl command of a markdown file, as TestDocs_CurlExamplesWork runs it.
//
// The markdown conventions (README.md's Test section points here):
//   - Every command in a fenced code block whose first word is `curl` is an example; it spans
//     several lines while a quote is open or a line ends with `\`.
//   - It reaches the server through `$B` or serve's default address, `http://127.0.0.1:8080` or
//     `http://localhost:8080` (the test puts the live address in their place).
//   - It must answer 2xx, unless the comment on its last line says `# expect NNN`, the status
//     the doc shows on purpose (a precondition that fails, a placeholder that names nothing).
//   - `# untested: REASON` on its last line marks an example the test cannot run; it is
//     reported as skipped with the reason.
//   - A line `NAME=value` (a plain value: no spaces, quotes or `$`) in a fenced block sets NAME
//     for the examples after it in the same file, as it would in the reader's shell.
//   - `<!-- file: NAME -->` on the line before a fenced block makes the block the content of
//     the file NAME (letters, digits, `._-`) in the examples' working directory (for
//     `-d @NAME`).
type docExample struct {
	file   string   // markdown path relative to the repository root
	line   int      // first line, 1-based
	script string   // the command as written
	expect int      // status the doc says it answers; 0: any 2xx
	skip   string   // why the test does not run it; "" = it runs
	env    []string // NAME=value set by the file before the example
}

// String names the example by its place in the docs.
func (e docExample) String() string { return fmt.Sprintf("%s:%d", e.file, e.line) }

var (
	assignRE     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=[^\s'"$\x60;|&()<>\\]+$`)
	fileMarkerRE = regexp.MustCompile(`^<!--\s*file:\s*([A-Za-z0-9._-]+)\s*-->$`)
	expectRE     = regexp.MustCompile(`^#\s*expect\s+(\d{3})\b`)
	untestedRE   = regexp.MustCompile(`^#\s*untested:\s*(\S.*)$`)
)

// parseDocExamples returns the curl examples of one markdown file, in order, and the files its
// `<!-- file: NAME -->` blocks define.
func parseDocExamples(file, text string) ([]docExample, map[string]string, error) {
	var (
		examples []docExample
		files    = map[string]string{}
		env      []string
		fence    string          // the open fence ("```" or "~~~"); "" outside blocks
		fileName string          // the file the open block defines
		body     strings.Builder // the open block's content, when it defines a file
		cur      *docExample     // the example being read
		prev     string          // the previous non-blank line outside blocks
	)
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		if fence == "" {
			if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
				fence, fileName = trimmed[:3], ""
				if m := fileMarkerRE.FindStringSubmatch(prev); m != nil {
					fileName = m[1]
					body.Reset()
				}
			} else if trimmed != "" {
				prev = trimmed
			}
			continue
		}
		if strings.HasPrefix(trimmed, fence) {
			if cur != nil {
				return nil, nil, fmt.Errorf("%s: the example at line %d does not end before its block (open quote or trailing \\)", file, cur.line)
			}
			if fileName != "" {
				if _, dup := files[fileName]; dup {
					return nil, nil, fmt.Errorf("%s:%d: file %s is defined twice", file, i+1, fileName)
				}
				files[fileName] = body.String()
			}
			fence, prev = "", ""
			continue
		}
		if fileName != "" {
			body.WriteString(line + "\n")
			continue
		}
		switch {
		case cur != nil:
			cur.script += "\n" + line
		case strings.HasPrefix(trimmed, "curl "):
			cur = &docExample{file: file, line: i + 1, script: line, env: append([]string(nil), env...)}
		case assignRE.MatchString(trimmed):
			env = append(env, trimmed)
			continue
		default:
			continue
		}
		open, comment := shellScan(cur.script)
		if open {
			continue
		}
		if m := expectRE.FindStringSubmatch(comment); m != nil {
			cur.expect, _ = strconv.Atoi(m[1])
		}
		if m := untestedRE.FindStringSubmatch(comment); m != nil {
			cur.skip = strings.TrimSpace(m[1])
		}
		examples = append(examples, *cur)
		cur = nil
	}
	if fence != "" {
		return nil, nil, fmt.Errorf("%s: a fenced block is never closed", file)
	}
	return examples, files, nil
}

// shellScan reads a POSIX shell command the way the shell splits it into words: open reports
// whether it goes on at the next line (an open quote, or a trailing backslash), comment is the
// comment of its last line ("" if none).
func shellScan(s string) (open bool, comment string) {
	var quote byte    // '\'' or '"' while inside quotes
	wordStart := true // the next character starts a word (a '#' there begins a comment)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			}
		case quote == '"':
			if c == '\\' {
				i++
			} else if c == '"' {
				quote = 0
			}
		case c == '\\':
			if i+1 == len(s) {
				return true, ""
			}
			i++
		case c == '\'' || c == '"':
			quote = c
		case c == '#' && wordStart:
			end := strings.IndexByte(s[i:], '\n')
			if end < 0 {
				return false, strings.TrimSpace(s[i:])
			}
			i += end - 1
		}
		wordStart = quote == 0 && (c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '|' || c == '&')
	}
	return quote != 0, comment
}
