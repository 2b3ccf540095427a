package mcpserver

import "bytes"

// A scanner over JSON already known to be valid (the transport checks every line with
// json.Valid before anything reads it): it finds the members of an object and the
// elements of an array without decoding them, so that a call's params and arguments can
// be checked without allocating. Whatever it does not expect makes it report false, and
// its callers then take the decoding path of encoding/json.

// members calls f with the key (between its quotes, escapes as written) and the value
// of each member of the JSON object data, in order, until f returns false. It reports
// false when data is not an object or does not scan, or f returned false.
func members(data []byte, f func(key, value []byte) bool) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return skipSpace(data, i+1) == len(data)
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return false
		}
		end := skipString(data, i)
		if end < 0 {
			return false
		}
		key := data[i+1 : end-1]
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		start := skipSpace(data, i+1)
		end = skipValue(data, start)
		if end < 0 || !f(key, data[start:end]) {
			return false
		}
		var more, ok bool
		if i, more, ok = nextItem(data, end, '}'); !more {
			return ok
		}
	}
}

// elements calls f with each element of the JSON array data, in order, until f returns
// false. It reports false when data is not an array or does not scan, or f returned
// false.
func elements(data []byte, f func(value []byte) bool) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return skipSpace(data, i+1) == len(data)
	}
	for {
		end := skipValue(data, i)
		if end < 0 || !f(data[i:end]) {
			return false
		}
		var more, ok bool
		if i, more, ok = nextItem(data, end, ']'); !more {
			return ok
		}
	}
}

// nextItem moves past what follows a member or element of a container ending at i:
// after a ',' to the next one (more), or past the container's closing bracket, which must
// end data (ok). Anything else does not scan.
func nextItem(data []byte, i int, closing byte) (next int, more, ok bool) {
	i = skipSpace(data, i)
	if i >= len(data) {
		return 0, false, false
	}
	switch data[i] {
	case ',':
		return skipSpace(data, i+1), true, true
	case closing:
		return 0, false, skipSpace(data, i+1) == len(data)
	}
	return 0, false, false
}

// plainString reports whether the JSON value v is a string without escapes: its bytes
// between the quotes are the string itself (as encoding/json decodes it when they are
// valid UTF-8).
func plainString(v []byte) bool {
	return len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' && bytes.IndexByte(v[1:len(v)-1], '\\') < 0
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index after the string that starts (with its quote) at i, or
// -1 when it does not end.
func skipString(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue returns the index after the value that starts at i, or -1.
func skipValue(data []byte, i int) int {
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				end := skipString(data, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(data) {
		switch data[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return j
		}
		j++
	}
	return j
}
