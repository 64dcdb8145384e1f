package textutil

import (
	"math"
	"strconv"
)

// Plural counts n things in words: "1 call", "3 calls", "0 calls".
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// Number prints x with at most two decimals and no trailing zeros, as a
// summary shows scores and seconds: 0.72, 83.33, 50.
func Number(x float64) string {
	return strconv.FormatFloat(math.Round(x*100)/100, 'f', -1, 64)
}
