// SPDX-License-Identifier: MIT
/*
 * dwarf_unwind.c - what a DWARF unwind of a copied user stack (perf's
 * `--call-graph dwarf`) would cost and recover for `khprof --sample`
 * (docs/SAMPLING.md, "Unwinding without frame pointers"; issue 21).
 *
 *   dwarf_unwind [-F HZ] [-s STACK_BYTES] -- PROGRAM [ARGS...]
 *
 * Runs PROGRAM with a CPU-clock perf event per thread (inherit, enabled at
 * its exec) whose samples carry, as perf's dwarf mode's do, the user
 * registers and STACK_BYTES of user stack from the stack pointer
 * (PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER), and the kernel's
 * frame-pointer walk of the same moment (PERF_SAMPLE_CALLCHAIN, the walk
 * bpf_get_stack does), for comparison.  After PROGRAM ends, each sample is
 * unwound with elfutils' libdwfl (dwfl_getthread_frames; the registers and
 * the copied stack through Dwfl_Thread_Callbacks) from the mappings read
 * while it ran, timed on this process's CPU clock.  Prints one line:
 *
 *   samples= bytes_per_sample= stack_used_mean=   what the copy carries
 *   fp_frames_mean= fp_complete=                  the frame-pointer walk
 *   dwarf_frames_mean= dwarf_complete=            the DWARF unwind
 *   dwarf_failed=                                 (complete: the outermost
 *                                                 frame is main, a thread's
 *                                                 entry or _start; failed:
 *                                                 no caller found)
 *   unwind_us_per_sample=                         unwinding, warm (a second
 *                                                 pass over the samples)
 *   first_pass_ms= setup_ms=                      the first pass, which also
 *                                                 reads each file's CFI; the
 *                                                 modules' report
 *
 * The kernel's copy itself runs in the sampled thread's interrupt: the
 * program's own CPU time beside a run with -s 0 shows it.  A measurement,
 * not khprof code: perf_event_open's own stack copy stands in for the
 * bpf_probe_read_user a BPF sampler would do, and the unwinder is
 * elfutils', which khprof already links for symbols.
 */
#define _GNU_SOURCE
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* perf's register numbers (asm/perf_regs.h), in the sample's order of bits. */
enum { R_AX, R_BX, R_CX, R_DX, R_SI, R_DI, R_BP, R_SP, R_IP, R_FLAGS, R_CS, R_SS, R_DS, R_ES,
       R_FS, R_GS, R_R8, R_R9, R_R10, R_R11, R_R12, R_R13, R_R14, R_R15 };
#define REG_MASK                                                                           \
	((1ull << R_AX) | (1ull << R_BX) | (1ull << R_CX) | (1ull << R_DX) | (1ull << R_SI) | \
	 (1ull << R_DI) | (1ull << R_BP) | (1ull << R_SP) | (1ull << R_IP) | (0xffull << R_R8))
#define NREGS 17
#define MAX_CPUS 64
/* DWARF's x86-64 numbering 0..16 (rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip) in perf's. */
static const int dwarf_to_perf[NREGS] = { R_AX, R_DX, R_CX, R_BX, R_SI, R_DI, R_BP, R_SP, R_R8,
					  R_R9, R_R10, R_R11, R_R12, R_R13, R_R14, R_R15, R_IP };

struct sample {
	uint32_t tid;
	uint32_t fp_frames;
	uint64_t fp_outer; /* the walk's outermost user address */
	uint64_t regs[24]; /* by perf number */
	uint64_t stack_size;
	uint8_t *stack;
	uint32_t dw_frames;
	uint64_t dw_outer; /* the unwind's outermost address */
};

static struct sample *samples;
static size_t nsamples, capsamples;
static uint64_t stack_bytes_total, record_bytes_total;
static char maps_text[1 << 16];
static size_t maps_len;
static const struct sample *current;

static void read_maps(pid_t pid)
{
	char path[64];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return;
	n = fread(maps_text, 1, sizeof(maps_text) - 1, f);
	fclose(f);
	if (n > 0) {
		maps_len = n;
		maps_text[n] = '\0';
	}
}

static void take(const uint8_t *p, uint64_t stack_want)
{
	struct sample s = { 0 };
	uint64_t nr, abi;
	int nregs = __builtin_popcountll(REG_MASK);

	p += 8; /* ip */
	s.tid = ((const uint32_t *)p)[1];
	p += 8;
	nr = *(const uint64_t *)p;
	p += 8;
	for (uint64_t i = 0; i < nr; i++) {
		uint64_t ip = ((const uint64_t *)p)[i];

		if (ip >= (uint64_t)PERF_CONTEXT_MAX)
			continue;
		s.fp_frames++;
		s.fp_outer = ip;
	}
	p += 8 * nr;
	abi = *(const uint64_t *)p;
	p += 8;
	if (abi) {
		int k = 0;

		for (int r = 0; r < 24; r++)
			if (REG_MASK & (1ull << r))
				s.regs[r] = ((const uint64_t *)p)[k++];
		p += 8 * nregs;
	}
	if (stack_want) {
		uint64_t size = *(const uint64_t *)p, dyn;

		p += 8;
		dyn = *(const uint64_t *)(p + size);
		s.stack_size = dyn < size ? dyn : size;
		s.stack = malloc(s.stack_size ? s.stack_size : 1);
		memcpy(s.stack, p, s.stack_size);
		stack_bytes_total += s.stack_size;
	}
	if (!abi)
		return; /* a sample in the kernel with no user registers */
	if (nsamples == capsamples) {
		capsamples = capsamples ? 2 * capsamples : 1024;
		samples = realloc(samples, capsamples * sizeof(*samples));
	}
	samples[nsamples++] = s;
}

static void drain(struct perf_event_mmap_page *meta, uint8_t *data, uint64_t data_size,
		  uint64_t stack_want)
{
	uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = meta->data_tail;
	static uint8_t buf[1 << 17];

	while (tail < head) {
		struct perf_event_header h;
		uint64_t off = tail % data_size;

		for (size_t i = 0; i < sizeof(h); i++)
			((uint8_t *)&h)[i] = data[(off + i) % data_size];
		for (size_t i = 0; i < h.size && i < sizeof(buf); i++)
			buf[i] = data[(off + i) % data_size];
		if (h.type == PERF_RECORD_SAMPLE) {
			take(buf + sizeof(h), stack_want);
			record_bytes_total += h.size;
		}
		tail += h.size;
	}
	__atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
}

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	(void)dwfl;
	(void)arg;
	if (*thread_argp)
		return 0;
	*thread_argp = (void *)1;
	return (pid_t)current->tid;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	uint64_t sp = current->regs[R_SP];

	(void)dwfl;
	(void)arg;
	if (addr < sp || addr + 8 > sp + current->stack_size)
		return false;
	memcpy(result, current->stack + (addr - sp), 8);
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	Dwarf_Word regs[NREGS];

	(void)arg;
	for (int i = 0; i < NREGS; i++)
		regs[i] = current->regs[dwarf_to_perf[i]];
	return dwfl_thread_state_registers(thread, 0, NREGS, regs);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

struct walk {
	unsigned frames;
	Dwarf_Addr outer;
};

static int on_frame(Dwfl_Frame *frame, void *arg)
{
	struct walk *w = arg;
	Dwarf_Addr pc;
	bool activation;

	if (!dwfl_frame_pc(frame, &pc, &activation))
		return DWARF_CB_ABORT;
	w->frames++;
	w->outer = pc;
	return w->frames < 128 ? DWARF_CB_OK : DWARF_CB_ABORT;
}

/*
 * Whether pc is in a function a complete user stack starts at: by name
 * where the file has symbols, else the executable's entry point (_start
 * of a stripped program such as Debian's grep).
 */
static bool is_entry(Dwfl *dwfl, Dwarf_Addr pc)
{
	Dwfl_Module *m = dwfl_addrmodule(dwfl, pc - 1);
	const char *name = m ? dwfl_module_addrname(m, pc - 1) : NULL;
	GElf_Addr bias;
	GElf_Ehdr eh;
	Elf *elf;

	if (name && (!strcmp(name, "main") || !strcmp(name, "__libc_start_call_main") ||
		     !strcmp(name, "__libc_start_main") || !strcmp(name, "start_thread") ||
		     !strcmp(name, "__clone3") || !strcmp(name, "_start")))
		return true;
	elf = m ? dwfl_module_getelf(m, &bias) : NULL;
	return elf && gelf_getehdr(elf, &eh) && eh.e_type == ET_DYN && eh.e_entry &&
	       pc - 1 >= eh.e_entry + bias && pc - 1 < eh.e_entry + bias + 64;
}

/* One module per mapped file, at the start of its first mapping (the load bias of PIE and .so). */
static void report_modules(Dwfl *dwfl)
{
	char *save = NULL;

	dwfl_report_begin(dwfl);
	for (char *line = strtok_r(maps_text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long long start, end, pgoff;
		char perms[8], path[4096];

		path[0] = '\0';
		if (sscanf(line, "%llx-%llx %7s %llx %*x:%*x %*u %4095s", &start, &end, perms, &pgoff,
			   path) < 4 || path[0] != '/' || pgoff != 0)
			continue;
		dwfl_report_elf(dwfl, path, path, -1, start, false);
	}
	dwfl_report_end(dwfl, NULL, NULL);
}

static double cpu_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	static const Dwfl_Callbacks callbacks = {
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
	};
	uint64_t hz = 999, stack_want = 8192, pages = 512;
	struct perf_event_attr attr = { 0 };
	int go[2], opt, fds[MAX_CPUS], ncpus, status;
	uint8_t *bases[MAX_CPUS];
	uint64_t fp_frames = 0, fp_complete = 0, dw_frames = 0, dw_complete = 0, dw_failed = 0;
	double t0, setup_ms, first_ms, unwind_ms;
	pid_t pid;
	Dwfl *dwfl;

	while ((opt = getopt(argc, argv, "F:s:")) != -1) {
		if (opt == 'F')
			hz = strtoull(optarg, NULL, 10);
		else if (opt == 's')
			stack_want = strtoull(optarg, NULL, 10);
		else
			return 2;
	}
	if (optind >= argc) {
		fprintf(stderr, "usage: dwarf_unwind [-F HZ] [-s STACK_BYTES] -- PROGRAM [ARGS...]\n");
		return 2;
	}
	if (pipe(go))
		return 1;
	pid = fork();
	if (pid == 0) {
		char c;

		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		execvp(argv[optind], argv + optind);
		_exit(127);
	}
	close(go[0]);
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.freq = 1;
	attr.sample_freq = hz;
	attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_CALLCHAIN |
			   PERF_SAMPLE_REGS_USER | (stack_want ? PERF_SAMPLE_STACK_USER : 0);
	attr.sample_regs_user = REG_MASK;
	attr.sample_stack_user = (uint32_t)stack_want;
	attr.exclude_callchain_kernel = 1;
	attr.inherit = 1;
	attr.disabled = 1;
	attr.enable_on_exec = 1;
	/* Per CPU: the kernel refuses to mmap an inherited per-task event (as perf opens them). */
	ncpus = (int)sysconf(_SC_NPROCESSORS_CONF);
	if (ncpus > MAX_CPUS)
		ncpus = MAX_CPUS;
	for (int c = 0; c < ncpus; c++) {
		fds[c] = (int)syscall(SYS_perf_event_open, &attr, pid, c, -1, PERF_FLAG_FD_CLOEXEC);
		if (fds[c] < 0) {
			fprintf(stderr, "dwarf_unwind: perf_event_open: %s\n", strerror(errno));
			kill(pid, SIGKILL);
			return 1;
		}
		bases[c] = mmap(NULL, (pages + 1) * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fds[c],
				0);
		if (bases[c] == MAP_FAILED) {
			fprintf(stderr, "dwarf_unwind: mmap: %s\n", strerror(errno));
			kill(pid, SIGKILL);
			return 1;
		}
	}
	if (write(go[1], "g", 1) != 1)
		return 1;
	close(go[1]);
	for (bool done = false; !done;) {
		struct pollfd p[MAX_CPUS];

		for (int c = 0; c < ncpus; c++)
			p[c] = (struct pollfd){ .fd = fds[c], .events = POLLIN };
		poll(p, (nfds_t)ncpus, 50);
		read_maps(pid); /* until it is gone: its last mappings are the ones */
		done = waitpid(pid, &status, WNOHANG) == pid;
		for (int c = 0; c < ncpus; c++)
			drain((struct perf_event_mmap_page *)bases[c], bases[c] + 4096, pages * 4096,
			      stack_want);
	}

	t0 = cpu_ms();
	dwfl = dwfl_begin(&callbacks);
	report_modules(dwfl);
	if (!dwfl_attach_state(dwfl, NULL, pid, &thread_callbacks, NULL)) {
		fprintf(stderr, "dwarf_unwind: dwfl_attach_state: %s\n", dwfl_errmsg(-1));
		return 1;
	}
	setup_ms = cpu_ms() - t0;
	t0 = cpu_ms();
	for (size_t i = 0; i < nsamples; i++) {
		struct walk w = { 0 };

		current = &samples[i];
		dwfl_getthread_frames(dwfl, (pid_t)current->tid, on_frame, &w);
		samples[i].dw_frames = w.frames;
		samples[i].dw_outer = w.outer;
	}
	first_ms = cpu_ms() - t0;
	/* Again, warm: the first pass also read each file's CFI once. */
	t0 = cpu_ms();
	for (size_t i = 0; i < nsamples; i++) {
		struct walk w = { 0 };

		current = &samples[i];
		dwfl_getthread_frames(dwfl, (pid_t)current->tid, on_frame, &w);
	}
	unwind_ms = cpu_ms() - t0;
	for (size_t i = 0; i < nsamples; i++) {
		fp_frames += samples[i].fp_frames;
		fp_complete += samples[i].fp_outer && is_entry(dwfl, samples[i].fp_outer);
		dw_frames += samples[i].dw_frames;
		dw_failed += samples[i].dw_frames <= 1;
		dw_complete += samples[i].dw_outer && is_entry(dwfl, samples[i].dw_outer);
	}
	printf("samples=%zu bytes_per_sample=%.0f stack_used_mean=%.0f fp_frames_mean=%.2f "
	       "fp_complete=%.3f dwarf_frames_mean=%.2f dwarf_complete=%.3f dwarf_failed=%.3f "
	       "unwind_us_per_sample=%.1f first_pass_ms=%.1f setup_ms=%.1f\n",
	       nsamples, nsamples ? (double)record_bytes_total / (double)nsamples : 0,
	       nsamples ? (double)stack_bytes_total / (double)nsamples : 0,
	       nsamples ? (double)fp_frames / (double)nsamples : 0,
	       nsamples ? (double)fp_complete / (double)nsamples : 0,
	       nsamples ? (double)dw_frames / (double)nsamples : 0,
	       nsamples ? (double)dw_complete / (double)nsamples : 0,
	       nsamples ? (double)dw_failed / (double)nsamples : 0,
	       nsamples ? unwind_ms * 1e3 / (double)nsamples : 0, first_ms, setup_ms);
	dwfl_end(dwfl);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
