//go:build !race

package atmclient

// raceDetector reports whether the tests run under the race detector.
const raceDetector = false
