{
  "targets": [
    {
      "target_name": "svc_kernels",
      "sources": ["kernels.c", "avx2.c", "attention.c", "weigh.c"],
      "defines": ["NAPI_VERSION=8"],
      "cflags_c": ["-std=gnu11", "-O3", "-pthread"],
      "ldflags": ["-pthread"],
      "xcode_settings": { "OTHER_CFLAGS": ["-std=gnu11", "-O3"] }
    }
  ]
}
