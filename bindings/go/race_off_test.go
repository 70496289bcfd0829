//go:build !race

package toolnexus

const raceEnabled = false
