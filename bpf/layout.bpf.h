/* SPDX-License-Identifier: GPL-2.0 */
/*
 * layout.bpf.h - part of khprof.bpf.c: the process sample taken at each
 * transition (CPU time, resident pages, threads), which reads kernel
 * internals by their layout: per-CPU offsets and bpf_array's element
 * offset learned from maps of our own, the scheduler's clock through
 * bpf_event_entry and perf_event, the per-CPU parts of mm's RSS counters.
 * Each is checked where it is learned or read; one that does not hold
 * sets its bit in layout_failed and the sample goes on without it (the
 * loader names it on stderr and in the record, trace.c), so a new kernel
 * breaks one figure, not the load.
 */
#ifndef KHPROF_LAYOUT_BPF_H
#define KHPROF_LAYOUT_BPF_H

/* Bits of layout_failed (enum kh_layout in khprof_shared.h); also site.bpf.h's. */
__u32 layout_failed = 0;

/*
 * Each CPU's per-CPU offset (__per_cpu_offset[cpu]), to find the CPUs'
 * copies of a per-CPU counter.  This kernel has no data symbols in
 * kallsyms, so typed per-CPU ksyms (this_cpu_off) do not load; instead the
 * offsets are learned once from a per-CPU array of our own: the kernel
 * hands out each CPU's copy of its element, and the array holds the
 * element's per-CPU address.
 */
#define KH_MAX_CPUS 1024
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} cpu_offset_probe SEC(".maps");
__u64 cpu_offsets[KH_MAX_CPUS] = {};
__u32 cpu_offset_count = 0; /* 0 until learned */

/*
 * One cpu-clock perf event per CPU (counting only, no timer), opened by the
 * loader: reading one makes the kernel store local_clock() in it, the clock
 * the scheduler's rq->clock is taken from, which no BPF helper returns.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} sched_clocks SEC(".maps");

/* A pointer's value as a number (the verifier keeps pointer types apart). */
static __always_inline __u64 address_of(const void *p)
{
	const void *slot = p;
	__u64 value = 0;

	bpf_probe_read_kernel(&value, sizeof(value), &slot);
	return value;
}

static long learn_cpu_offset(__u64 cpu, void *ctx)
{
	__u64 *base = ctx;
	__u32 zero = 0;
	void *copy = bpf_map_lookup_percpu_elem(&cpu_offset_probe, &zero, (__u32)cpu);

	if (!copy || cpu >= KH_MAX_CPUS)
		return 1; /* past the last possible CPU */
	cpu_offsets[cpu] = address_of(copy) - *base;
	cpu_offset_count = cpu + 1;
	return 0;
}

/*
 * Where an array map's elements start in its struct bpf_array (value, ptrs
 * and pptrs share one union, so the same for every array type), learned
 * from a one-element array of our own rather than by a CO-RE relocation:
 * every kernel type a program names costs libbpf 1.1 a linear search of
 * the kernel's BTF at each start (~0.7 ms here; bpf_array and
 * bpf_event_entry were two of ten).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8);
} array_layout_probe SEC(".maps");
__u64 array_value_offset = 0; /* 0 until learned: struct bpf_map comes first */

/* The address of map's first element (or of its ptrs[0], pptrs[0]); 0 if unknown. */
static __always_inline __u64 array_elements_of(const void *map)
{
	__u32 zero = 0;
	void *first;

	if (!array_value_offset) {
		__u64 off;

		first = bpf_map_lookup_elem(&array_layout_probe, &zero);
		if (!first)
			return 0;
		off = address_of(first) - address_of(&array_layout_probe);
		/* Past struct bpf_map, within a page: else not the layout this reads. */
		if (off < sizeof(__u64) || off >= 4096) {
			layout_failed |= 1u << KH_LAYOUT_ARRAY_VALUE;
			return 0;
		}
		array_value_offset = off;
	}
	return address_of(map) + array_value_offset;
}

static __always_inline __u32 learn_cpu_offsets(void)
{
	__u64 pptrs = array_elements_of(&cpu_offset_probe), base = 0;

	if (!pptrs || bpf_probe_read_kernel(&base, sizeof(base), (void *)pptrs) || !base) {
		layout_failed |= 1u << KH_LAYOUT_CPU_OFFSETS;
		return 0;
	}
	kh_loop(KH_CLASSIC_CPUS, KH_MAX_CPUS, learn_cpu_offset, &base);
	/* Each CPU has a copy of its own. */
	if (!cpu_offset_count || (cpu_offset_count > 1 && cpu_offsets[1] == cpu_offsets[0])) {
		layout_failed |= 1u << KH_LAYOUT_CPU_OFFSETS;
		cpu_offset_count = 0;
	}
	return cpu_offset_count;
}

struct rss_walk {
	__u64 counters[3]; /* per-CPU addresses of the file, anon, shmem parts */
	__u32 btf_id;
	__s64 pages;
};

static long add_cpu_rss(__u64 cpu, void *ctx)
{
	struct rss_walk *w = ctx;
	__u64 off = cpu_offsets[cpu & (KH_MAX_CPUS - 1)];

	for (int i = 0; i < 3; i++) {
		struct signal_struct *part;
		__s32 v = 0;

		if (have_rdonly_cast) {
			part = bpf_rdonly_cast((void *)(w->counters[i] + off), w->btf_id);
			v = part->sigcnt.refs.counter;
		} else {
			bpf_probe_read_kernel(&v, sizeof(v), (void *)(w->counters[i] + off));
		}
		w->pages += v;
	}
	return 0;
}

/* Linux before 6.2: one atomic_long_t per counter in a struct, no per-CPU parts. */
struct mm_rss_stat___old {
	atomic_long_t count[4];
} __attribute__((preserve_access_index));
struct mm_struct___old {
	struct mm_rss_stat___old rss_stat;
} __attribute__((preserve_access_index));

static __always_inline __u64 resident_pages_old(struct mm_struct *mm)
{
	struct mm_struct___old *old = (void *)mm;
	__s64 pages = BPF_CORE_READ(old, rss_stat.count[MM_FILEPAGES].counter) +
		      BPF_CORE_READ(old, rss_stat.count[MM_ANONPAGES].counter) +
		      BPF_CORE_READ(old, rss_stat.count[MM_SHMEMPAGES].counter);

	return pages > 0 ? pages : 0;
}

/*
 * VmRSS counts file, anon and shmem pages, each a per-CPU counter that
 * /proc sums exactly (percpu_counter_sum): the folded totals alone trail it
 * by up to the batch (32 pages here) per CPU and counter, which made the
 * samples of a short state all equal.  So the CPUs' copies are added too.
 * Plain loads, not bpf_probe_read_kernel: this runs at every page fault of
 * the traced process (kh_rss_stat), where the helper calls cost it ~400 ns
 * per fault here.
 */
static __always_inline __u64 resident_pages_of(struct mm_struct *mm)
{
	static const int members[3] = { MM_FILEPAGES, MM_ANONPAGES, MM_SHMEMPAGES };
	__u32 cpus;
	/*
	 * Each part is an s32, read as the first member of a kernel struct that
	 * starts with one (signal_struct's refcount_t sigcnt): a type the
	 * program uses anyway, since every new kernel type costs libbpf a
	 * search of the kernel's BTF at load (~1 ms here).
	 */
	struct rss_walk w = { .btf_id = KERNEL_TYPE_ID(signal_struct) };
	/*
	 * Read through an untrusted copy of the pointer: the same plain loads,
	 * but each pointer loaded from a trusted one costs the verifier up to
	 * four searches of the kernel's BTF by name (btf_nested_type_is_trusted),
	 * a linear scan here.  With this and the task casts below, verifying
	 * kh_rss_stat took 0.43 ms instead of 1.14, kh_usdt 9.7 instead of 10.5
	 * (medians of 9 loads, log_level 4 statistics).
	 */
	struct mm_struct *m;

	if (!have_percpu_rss)
		return resident_pages_old(mm);
	/*
	 * Learned only where RSS is per CPU: bpf_map_lookup_percpu_elem is
	 * Linux 5.19, and the classic object (5.10) must not reach it.
	 */
	cpus = cpu_offset_count ?: learn_cpu_offsets();
	if (have_rdonly_cast) {
		m = bpf_rdonly_cast(mm, KERNEL_TYPE_ID(mm_struct));
		for (int i = 0; i < 3; i++) {
			w.pages += m->rss_stat[members[i]].count;
			w.counters[i] = (__u64)m->rss_stat[members[i]].counters;
		}
	} else {
		for (int i = 0; i < 3; i++) {
			w.pages += BPF_CORE_READ(mm, rss_stat[members[i]].count);
			w.counters[i] = (__u64)BPF_CORE_READ(mm, rss_stat[members[i]].counters);
		}
	}
	kh_loop(KH_CLASSIC_CPUS, cpus, add_cpu_rss, &w);
	return w.pages > 0 ? w.pages : 0;
}

/* local_clock() on this CPU now, or 0 when the loader opened no clock. */
static __always_inline __u64 sched_clock_now(void)
{
	__u64 ptrs = array_elements_of(&sched_clocks);
	__u32 cpu = bpf_get_smp_processor_id();
	struct bpf_perf_event_value value;
	struct perf_event *event = NULL;
	void *entry = NULL;
	__u64 now = 0;

	if (!ptrs || bpf_perf_event_read_value(&sched_clocks, BPF_F_CURRENT_CPU, &value,
					       sizeof(value)))
		return 0;
	bpf_probe_read_kernel(&entry, sizeof(entry), (void *)(ptrs + cpu * sizeof(void *)));
	/* struct bpf_event_entry's first member: no relocation to resolve */
	if (entry)
		bpf_probe_read_kernel(&event, sizeof(event), entry);
	if (event)
		bpf_probe_read_kernel(&now, sizeof(now), &event->hw.prev_count);
	/* The event was just read, so its clock has a value: else the layout moved. */
	if (!now)
		layout_failed |= 1u << KH_LAYOUT_SCHED_CLOCK;
	return now;
}

/*
 * The running thread's time since the scheduler last accounted it, which
 * update_curr() would add now: what CLOCK_PROCESS_CPUTIME_ID adds for the
 * calling thread.  Without it a state shorter than a tick (4 ms here) spent
 * on CPU showed no CPU time at all.  Steal time since the runqueue's clock
 * last moved (microseconds) is not taken off, as the kernel would.
 */
static __always_inline __u64 pending_runtime(struct task_struct *task)
{
	struct rq *rq = BPF_CORE_READ(task, se.cfs_rq, rq);
	__u64 now = sched_clock_now(), clock, clock_task, exec_start;

	if (!now || !rq || BPF_CORE_READ(rq, curr) != task)
		return 0;
	clock = BPF_CORE_READ(rq, clock);
	clock_task = BPF_CORE_READ(rq, clock_task);
	exec_start = BPF_CORE_READ(task, se.exec_start);
	if (now < clock || clock_task < exec_start)
		return 0;
	return (now - clock) + (clock_task - exec_start);
}

struct thread_walk {
	__u64 head; /* &signal->thread_head */
	__u64 pos;  /* the current thread's thread_node */
	__u64 ns;
};

static long add_thread_runtime(__u64 i, void *ctx)
{
	struct thread_walk *w = ctx;
	struct list_head *pos = (void *)w->pos;
	struct task_struct *t;

	if (w->pos == w->head || !pos)
		return 1;
	t = (void *)(w->pos - bpf_core_field_offset(struct task_struct, thread_node));
	w->ns += BPF_CORE_READ(t, se.sum_exec_runtime);
	/* list_head.next is its first member: no relocation to resolve */
	if (bpf_probe_read_kernel(&w->pos, sizeof(w->pos), pos))
		return 1;
	return 0;
}

/*
 * CPU time of the whole process as CLOCK_PROCESS_CPUTIME_ID sums it: the
 * threads that exited (signal->sum_sched_runtime) plus every live thread's
 * runtime as the scheduler last accounted it (for_each_thread, under the
 * RCU read lock every non-sleepable program runs in), plus the calling
 * thread's time since then.  A thread exiting during the walk can be
 * counted twice or not at all (its time moves into the sum under a lock
 * this walk does not take).
 */
static __always_inline __u64 process_cpu_ns(struct task_struct *task)
{
	struct signal_struct *signal = BPF_CORE_READ(task, signal);
	struct thread_walk w = {
		.head = (__u64)&signal->thread_head,
		.pos = (__u64)BPF_CORE_READ(signal, thread_head.next),
		.ns = BPF_CORE_READ(signal, sum_sched_runtime) + pending_runtime(task),
	};

#ifdef KH_CLASSIC
	kh_loop(KH_CLASSIC_THREADS, KH_CLASSIC_THREADS, add_thread_runtime, &w);
#else
	bpf_loop(65536, add_thread_runtime, &w, 0);
#endif
	return w.ns;
}

/*
 * The process at the probe, and its peaks since the previous sample.  A
 * global function, so the verifier checks it once instead of at each of
 * kh_usdt's three sampling probes (11 ms more at every start inlined).
 */
KH_GLOBAL __noinline int kh_sample_task(struct kh_event *e)
{
	struct task_struct *task = kh_current_task();
	struct mm_struct *mm = kh_task_mm(task);
	__u64 threads, pages = 0;

	if (!e)
		return 0;

	threads = BPF_CORE_READ(task, signal, nr_threads);
	e->cpu_ns = process_cpu_ns(task);
	if (mm) {
		e->virtual_pages = BPF_CORE_READ(mm, total_vm);
		pages = resident_pages_of(mm);
		end_resident_pages = pages;
		end_virtual_pages = e->virtual_pages;
	}
	e->resident_pages = pages;
	e->threads = threads;
	e->peak_threads = peak_threads > threads ? peak_threads : threads;
	e->peak_resident_pages = peak_resident_pages > pages ? peak_resident_pages : pages;
	peak_threads = threads;
	peak_resident_pages = pages;
	e->sampled_ns = bpf_ktime_get_ns();
	return 0;
}

#endif /* KHPROF_LAYOUT_BPF_H */
