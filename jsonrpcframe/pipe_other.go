//go:build !linux

package jsonrpcframe

import "os"

// NewPipe returns a Pipe that uses f's own I/O (the raw calls are Linux's).
func NewPipe(f *os.File) *Pipe { return &Pipe{f: f} }

// Read reads like os.File.Read.
func (p *Pipe) Read(b []byte) (int, error) {
	if p.empty != nil {
		p.empty()
	}
	return p.f.Read(b)
}

func (p *Pipe) write(b []byte, wait bool) (int, bool, error) {
	if !wait {
		return 0, len(b) > 0, nil // cannot tell without waiting
	}
	n, err := p.f.Write(b)
	return n, false, err
}
