// SPDX-License-Identifier: MIT
/*
 * The program the hostile-file tests mutate (tests/common/elfcraft.h):
 * built like an outside program, only include/keyhog_profile.h, then
 * copied and changed byte by byte as a fuzzer or an attacker would, so
 * that each check of usdt/usdt_notes.c meets the file it is for
 * (tests/unit/tracing/test_usdt.c, tests/integration/commands/test_hostile.c).
 *
 * It runs one session of three spans, then prints what it computed from
 * its own bytes, "value=0x41 rodata=0x41": the immediate of an
 * instruction in its code (target_value) and the first byte of a constant
 * array (target_rodata).  A breakpoint the kernel wrote into either would
 * show there.  It also has a symbol in each kind of data a semaphore may
 * be pointed at: .data, .bss and RELRO data.
 */
#include <stdint.h>
#include <stdio.h>

#include "keyhog_profile.h"

/*
 * "movl $0x41, %eax; ret": the 0x41 is the byte at target_value + 1.  On
 * aarch64 "mov w0, #0x41; ret", the immediate inside the word 52800820.
 */
#if defined(__aarch64__)
#define TARGET_VALUE_CODE "mov w0, #0x41\n\t"
#else
#define TARGET_VALUE_CODE "movl $0x41, %eax\n\t"
#endif
__asm__(".pushsection .text\n"
	".globl target_value\n"
	".type target_value, @function\n"
	"target_value:\n\t"
	TARGET_VALUE_CODE
	"ret\n"
	".size target_value, .-target_value\n"
	".popsection\n");
unsigned int target_value(void);

const unsigned char target_rodata[64] = { 0x41, 0x42, 0x43, 0x44 };
unsigned char target_data[64] = { 1 };
unsigned char target_bss[64];
/* A pointer the loader relocates, so RELRO data in a position-independent executable. */
const char *const target_relro = "relro";

static volatile uint64_t sink;

int main(void)
{
	KH_SESSION_START();
	KH_IDENTITY("binary_version", "target 1");
	KH_TRANSITION(KH_STATE_SCANNING);
	for (int i = 0; i < 3; i++) {
		KH_SPAN_SCOPE(KH_STAGE_HOT_PATTERNS);
		sink += (uint64_t)i + target_data[0] + target_bss[0] + (uint64_t)target_relro[0];
	}
	KH_SESSION_FINISH(KH_STATE_COMPLETED);
	printf("value=0x%x rodata=0x%x\n", target_value(),
	       *(const volatile unsigned char *)target_rodata);
	return 0;
}
