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

// jsonString returns s as a JSON string, as json.Marshal writes it. Agent
// ids and identities (printable ASCII that needs no escape) are quoted as
// they are: this runs for every event.
func jsonString(s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s)
			return b
		}
	}
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
