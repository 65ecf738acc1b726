package jsonrpcframe

import "encoding/binary"

// This file is a validating JSON scanner: it accepts exactly what
// encoding/json.Valid accepts (RFC 8259 syntax, any bytes ≥ 0x20 inside
// strings, nesting up to 10000 levels) and reports where a value ends, so
// that a message is checked and split into its members in one pass. It is
// several times faster than json.Valid on the long strings Codex events are
// made of, and every message a proxy relays goes through it.

// maxNesting is encoding/json's nesting limit.
const maxNesting = 10000

// scanValue returns the index just past the JSON value that starts at b[i]
// (white space before it is skipped), or -1 when b does not hold a valid
// JSON value there.
func scanValue(b []byte, i int) int {
	var stackBuf [32]byte
	stack := stackBuf[:0] // open containers, '{' or '['
	const (
		wantValue = iota
		wantKey
		afterValue
	)
	state := wantValue
	for {
		switch state {
		case wantValue:
			i = skipWS(b, i)
			if i >= len(b) {
				return -1
			}
			switch c := b[i]; c {
			case '{', '[':
				if len(stack) >= maxNesting {
					return -1
				}
				i = skipWS(b, i+1)
				if i < len(b) && b[i] == c+2 { // '}' or ']'
					i++
					state = afterValue
					continue
				}
				stack = append(stack, c)
				if c == '{' {
					state = wantKey
				}
				continue
			case '"':
				i = scanString(b, i)
			case 't':
				i = scanLiteral(b, i, "true")
			case 'f':
				i = scanLiteral(b, i, "false")
			case 'n':
				i = scanLiteral(b, i, "null")
			default:
				i = scanNumber(b, i)
			}
			if i < 0 {
				return -1
			}
			state = afterValue
		case wantKey:
			i = skipWS(b, i)
			if i >= len(b) || b[i] != '"' {
				return -1
			}
			if i = scanString(b, i); i < 0 {
				return -1
			}
			i = skipWS(b, i)
			if i >= len(b) || b[i] != ':' {
				return -1
			}
			i++
			state = wantValue
		case afterValue:
			if len(stack) == 0 {
				return i
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return -1
			}
			top := stack[len(stack)-1]
			switch b[i] {
			case ',':
				i++
				if top == '{' {
					state = wantKey
				} else {
					state = wantValue
				}
			case top + 2: // the matching '}' or ']'
				i++
				stack = stack[:len(stack)-1]
			default:
				return -1
			}
		}
	}
}

// strPlain marks the bytes that stand for themselves inside a JSON string:
// everything but '"', '\\' and control characters.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plain8 reports whether none of the 8 bytes of x is '"', '\\' or below
// 0x20 (the classic "has zero byte" / "has byte less than" bit tricks).
func plain8(x uint64) bool {
	quote := x ^ (ones * '"')
	slash := x ^ (ones * '\\')
	special := (x - ones*0x20) | (quote - ones) | (slash - ones)
	special &^= x // a byte with its top bit set is never special
	return special&highs == 0
}

// scanString returns the index just past the JSON string that starts at
// b[i] == '"', or -1.
func scanString(b []byte, i int) int {
	i++
	for {
		for i+8 <= len(b) && plain8(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		for i < len(b) && strPlain[b[i]] {
			i++
		}
		if i >= len(b) {
			return -1
		}
		switch b[i] {
		case '"':
			return i + 1
		case '\\':
			i++
			if i >= len(b) {
				return -1
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+5 > len(b) || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					return -1
				}
				i += 5
			default:
				return -1
			}
		default: // a control character
			return -1
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// scanLiteral returns the index just past lit at b[i], or -1.
func scanLiteral(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// scanNumber returns the index just past the JSON number at b[i], or -1.
func scanNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(b, i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// validJSON reports whether b is one JSON value surrounded by nothing but
// JSON white space, as json.Valid does.
func validJSON(b []byte) bool {
	end := scanValue(b, 0)
	return end >= 0 && skipWS(b, end) == len(b)
}
