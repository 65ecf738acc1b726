// Package jsonarray finds the top-level elements of a JSON array without
// decoding them, so that an inbox can be parsed one element at a time and a
// malformed element does not hide the rest of the file.
package jsonarray

import (
	"bytes"
	"errors"
	"fmt"
)

// ErrSyntax is wrapped by every error Split returns.
var ErrSyntax = errors.New("not a JSON array")

// Split returns the top-level elements of the JSON array in data, each
// without surrounding white space, in order. The slices alias data.
//
// Split checks only the structure needed to find element boundaries: the
// outer brackets, string quoting, bracket nesting and the commas between
// elements. An element it returns may still be invalid JSON (a bad number or
// literal, say); callers validate elements one by one.
func Split(data []byte) ([][]byte, error) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return nil, fmt.Errorf("%w: does not start with '['", ErrSyntax)
	}
	i = skipSpace(data, i+1)
	elems := [][]byte{}
	if i < len(data) && data[i] == ']' {
		return elems, trailing(data, i+1)
	}
	for {
		end, err := skipValue(data, i)
		if err != nil {
			return nil, err
		}
		elems = append(elems, data[i:end])
		i = skipSpace(data, end)
		if i >= len(data) {
			return nil, fmt.Errorf("%w: unexpected end after element %d", ErrSyntax, len(elems)-1)
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case ']':
			return elems, trailing(data, i+1)
		default:
			return nil, fmt.Errorf("%w: unexpected %q at offset %d", ErrSyntax, data[i], i)
		}
	}
}

func trailing(data []byte, i int) error {
	if j := skipSpace(data, i); j != len(data) {
		return fmt.Errorf("%w: trailing data at offset %d", ErrSyntax, j)
	}
	return nil
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the offset just past the string that starts with the
// quote at data[i].
func skipString(data []byte, i int) (int, error) {
	j := i + 1
	for {
		k := bytes.IndexByte(data[j:], '"')
		if k < 0 {
			return 0, fmt.Errorf("%w: unterminated string at offset %d", ErrSyntax, i)
		}
		q := j + k
		n := 0
		for p := q - 1; p > i && data[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, nil
		}
		j = q + 1
	}
}

// skipValue returns the offset just past the value that starts at data[i].
func skipValue(data []byte, i int) (int, error) {
	if i >= len(data) {
		return 0, fmt.Errorf("%w: unexpected end at offset %d", ErrSyntax, i)
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		var stack []byte
		for j := i; j < len(data); {
			switch c := data[j]; c {
			case '"':
				end, err := skipString(data, j)
				if err != nil {
					return 0, err
				}
				j = end
				continue
			case '{':
				stack = append(stack, '}')
			case '[':
				stack = append(stack, ']')
			case '}', ']':
				if len(stack) == 0 || stack[len(stack)-1] != c {
					return 0, fmt.Errorf("%w: unbalanced %q at offset %d", ErrSyntax, c, j)
				}
				stack = stack[:len(stack)-1]
				if len(stack) == 0 {
					return j + 1, nil
				}
			}
			j++
		}
		return 0, fmt.Errorf("%w: unterminated value at offset %d", ErrSyntax, i)
	case ',', ']', '}', ':':
		return 0, fmt.Errorf("%w: missing value at offset %d", ErrSyntax, i)
	default:
		j := i
		for j < len(data) {
			switch data[j] {
			case ',', ']', '}', ' ', '\t', '\n', '\r', '"', '{', '[':
				return j, nil
			}
			j++
		}
		return j, nil
	}
}
