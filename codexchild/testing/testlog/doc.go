// Package testlog is test support for code that logs and checks what it
// reported: a logger whose output the test shows only when it fails, and a
// testing.TB that records the errors and cleanups of a helper under test.
//
// The log is kept in memory rather than written with t.Log because a
// child's stderr may arrive after the test has ended, when t.Log panics;
// Logger shows it at cleanup instead. It lives in codexchild's test wing
// beside poll, for the modules that use the wing already.
package testlog
