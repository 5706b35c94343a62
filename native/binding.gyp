{
  "variables": {
    "ts_dir": "<!(node -p \"require('path').dirname(require.resolve('tree-sitter/package.json'))\")"
  },
  "targets": [
    {
      "target_name": "gpu_review_native",
      "sources": ["mirror.c", "runtime.c"],
      "include_dirs": ["<(ts_dir)/vendor/tree-sitter/lib/src", "<(ts_dir)/vendor/tree-sitter/lib/include"],
      "defines": ["_POSIX_C_SOURCE=200112L", "_DEFAULT_SOURCE", "NAPI_VERSION=8"],
      "cflags_c": ["-std=c11", "-O2", "-fvisibility=hidden"]
    }
  ]
}
