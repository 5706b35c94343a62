/*
 * One native walk per syntax tree, filling the arrays of gpu-review's tree mirror
 * (src/sources/tree-sitter/mirror.ts). The JS fallback does the same walk with a TreeCursor, crossing into
 * native code five or six times per node; here it is one call per tree.
 *
 * The tree is the one the tree-sitter Node binding parsed. Its root node's id, which the binding
 * hands to JS in the node's first two transfer words, is `&tree->root`, and `root` is the first
 * member of `struct TSTree`, so that id is the TSTree pointer itself (checked at compile time
 * below). This file is compiled against the same vendored runtime sources as the binding.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <node_api.h>
#include "tree_sitter/api.h"
#include "tree.h"

_Static_assert(offsetof(struct TSTree, root) == 0, "TSTree.root must be the first member");

#define CHECK(call)                                                  \
  do {                                                               \
    if ((call) != napi_ok) {                                         \
      napi_throw_error(env, NULL, "gpu-review native: " #call);      \
      return NULL;                                                   \
    }                                                                \
  } while (0)

static const TSTree *tree_arg(napi_env env, napi_callback_info info, napi_value *argv, size_t want) {
  size_t argc = want;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2) return NULL;
  uint32_t lo = 0, hi = 0;
  if (napi_get_value_uint32(env, argv[0], &lo) != napi_ok) return NULL;
  if (napi_get_value_uint32(env, argv[1], &hi) != napi_ok) return NULL;
  uint64_t bits = ((uint64_t)hi << 32) | lo;
  if (sizeof(void *) == 4) bits = lo;
  return (const TSTree *)(uintptr_t)bits;
}

/*
 * walk(idLo, idHi) -> ArrayBuffer | undefined
 * Layout for n nodes in pre-order: start u32[n], end u32[n], parent i32[n], last i32[n],
 * type u16[n], field u16[n], missing u8[n]. Offsets are byte lengths, as the JS side computes them.
 * Positions are UTF-16 code units (the binding parses JS strings as UTF-16, so bytes / 2).
 */
static napi_value walk(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  const TSTree *tree = tree_arg(env, info, argv, 2);
  napi_value undef;
  CHECK(napi_get_undefined(env, &undef));
  if (!tree) return undef;
  TSNode root = ts_tree_root_node(tree);
  uint32_t n = ts_node_descendant_count(root);
  if (n == 0) return undef;
  size_t bytes = (size_t)n * 21;
  void *data = NULL;
  napi_value ab;
  CHECK(napi_create_arraybuffer(env, bytes, &data, &ab));
  uint32_t *start = (uint32_t *)data;
  uint32_t *end = start + n;
  int32_t *parent = (int32_t *)(end + n);
  int32_t *last = parent + n;
  uint16_t *type = (uint16_t *)(last + n);
  uint16_t *field = type + n;
  uint8_t *missing = (uint8_t *)(field + n);

  uint32_t cap = 64, depth = 0;
  int32_t *stack = (int32_t *)malloc(cap * sizeof(int32_t));
  if (!stack) return undef;
  TSTreeCursor c = ts_tree_cursor_new(root);
  uint32_t k = 0;
  int ok = 1;
  for (;;) {
    if (k >= n) {
      ok = 0;
      break;
    }
    TSNode node = ts_tree_cursor_current_node(&c);
    uint32_t s = ts_node_start_byte(node) / 2, e = ts_node_end_byte(node) / 2;
    type[k] = ts_node_symbol(node);
    start[k] = s;
    end[k] = e;
    field[k] = depth ? ts_tree_cursor_current_field_id(&c) : 0;
    missing[k] = (s == e && ts_node_is_missing(node)) ? 1 : 0;
    parent[k] = depth ? stack[depth - 1] : -1;
    last[k] = (int32_t)k;
    uint32_t me = k++;
    if (ts_tree_cursor_goto_first_child(&c)) {
      if (depth == cap) {
        cap *= 2;
        int32_t *grown = (int32_t *)realloc(stack, cap * sizeof(int32_t));
        if (!grown) {
          ok = 0;
          break;
        }
        stack = grown;
      }
      stack[depth++] = (int32_t)me;
      continue;
    }
    int done = 0;
    while (!ts_tree_cursor_goto_next_sibling(&c)) {
      if (!ts_tree_cursor_goto_parent(&c)) {
        done = 1;
        break;
      }
      last[stack[--depth]] = (int32_t)(k - 1);
    }
    if (done) break;
  }
  ts_tree_cursor_delete(&c);
  free(stack);
  if (!ok || k != n) return undef;
  return ab;
}

/*
 * language(idLo, idHi) -> { types: string[], named: boolean[], fields: string[] } for the tree's
 * language, indexed by symbol and field id. ERROR (65535) is not in the table.
 */
static napi_value language(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  const TSTree *tree = tree_arg(env, info, argv, 2);
  napi_value undef, out, types, named, fields;
  CHECK(napi_get_undefined(env, &undef));
  if (!tree) return undef;
  const TSLanguage *lang = ts_tree_language(tree);
  uint32_t ns = ts_language_symbol_count(lang);
  uint32_t nf = ts_language_field_count(lang);
  CHECK(napi_create_object(env, &out));
  CHECK(napi_create_array_with_length(env, ns, &types));
  CHECK(napi_create_array_with_length(env, ns, &named));
  CHECK(napi_create_array_with_length(env, nf + 1, &fields));
  for (uint32_t s = 0; s < ns; s++) {
    const char *name = ts_language_symbol_name(lang, (TSSymbol)s);
    napi_value v, b;
    if (name) CHECK(napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &v));
    else v = undef;
    CHECK(napi_get_boolean(env, ts_language_symbol_type(lang, (TSSymbol)s) == TSSymbolTypeRegular, &b));
    CHECK(napi_set_element(env, types, s, v));
    CHECK(napi_set_element(env, named, s, b));
  }
  for (uint32_t f = 1; f <= nf; f++) {
    const char *name = ts_language_field_name_for_id(lang, (TSFieldId)f);
    napi_value v;
    if (name) CHECK(napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &v));
    else v = undef;
    CHECK(napi_set_element(env, fields, f, v));
  }
  CHECK(napi_set_named_property(env, out, "types", types));
  CHECK(napi_set_named_property(env, out, "named", named));
  CHECK(napi_set_named_property(env, out, "fields", fields));
  return out;
}

NAPI_MODULE_INIT() {
  napi_value f;
  if (napi_create_function(env, "walk", NAPI_AUTO_LENGTH, walk, NULL, &f) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "walk", f) != napi_ok) return NULL;
  if (napi_create_function(env, "language", NAPI_AUTO_LENGTH, language, NULL, &f) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "language", f) != napi_ok) return NULL;
  return exports;
}
