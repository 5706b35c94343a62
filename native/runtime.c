/* The tree-sitter runtime, from the sources vendored by the installed `tree-sitter` package, so its
 * structures match the binding that built the trees. */
#include "lib.c"
