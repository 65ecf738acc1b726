package acp

// ParseUpdateGeneral is ParseUpdate without its fast path for chunks.
var ParseUpdateGeneral = parseUpdate
