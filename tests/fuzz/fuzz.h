/* fuzz: the libFuzzer entry point every tests/fuzz/fuzz_*.c target defines;
 * replay.c calls it for each corpus file when built without libFuzzer. */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* Run one input. Must not keep data; returns 0 (libFuzzer's convention). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
