//go:build kuradebug

package assert

// debugBuild is set by the kuradebug build tag.
const debugBuild = true
