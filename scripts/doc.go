// Package scripts holds the tests of the shell scripts the Makefile and CI
// run (fuzz.sh); the Python scripts beside them are tools of their own.
package scripts
