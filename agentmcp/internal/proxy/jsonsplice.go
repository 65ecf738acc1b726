package proxy

import "encoding/json"

// appendMember appends ,"key":value (the comma when b does not end in '{').
func appendMember(b []byte, quotedKey string, val []byte) []byte {
	if len(b) > 0 && b[len(b)-1] != '{' {
		b = append(b, ',')
	}
	b = append(b, quotedKey...)
	b = append(b, ':')
	return append(b, val...)
}

// jsonString returns s as a JSON string.
func jsonString(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}
