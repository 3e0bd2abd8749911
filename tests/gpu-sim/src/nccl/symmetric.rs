//! User buffer registration and the symmetric kernels (NCCL 2.27+), as
//! `src/register/register.cc`, `src/symmetric.cc` (2.27) and
//! `src/scheduler/symmetric_sched.cc` (2.28-2.30) do them:
//!
//! - `ncclMemAlloc`/`ncclMemFree` (2.19+): device memory NCCL can map into its
//!   peers; here a driver allocation this module remembers as NCCL's;
//! - `ncclCommRegister`/`ncclCommDeregister` (2.19+): a handle per buffer. What a
//!   local registration saves (NCCL's staging copies where a transport maps the
//!   user's buffer) is not in NCCL's tuning model, and the stand-in's time is that
//!   model's, so its time is unchanged;
//! - `ncclCommWindowRegister`/`ncclCommWindowDeregister` (2.27+): a window. NCCL
//!   registers nothing, returning success and no window, with cuMem off or
//!   `NCCL_LOCAL_REGISTER=0` (from 2.29 also without symmetric support, whatever
//!   the flags: `dev_runtime.cc`, NVIDIA/nccl#1963); a buffer whose allocation is not page-aligned
//!   cuMem memory (not `ncclMemAlloc`'s here) gets a WARN and no window either;
//! - a lone collective (2.27: the only task of its launch; 2.28+: each) whose send and
//!   receive buffers are both in symmetric windows, on a communicator with
//!   `symmetricSupport` (one node, every pair of GPUs direct P2P, cuMem on,
//!   `NCCL_WIN_ENABLE` not 0), of a function, type and operator a symmetric kernel
//!   implements, runs the kernel NCCL's model picks ([`pick`]), costs that model's
//!   time and is logged as `<Coll> [Symmetric]: N Bytes -> Kernel K nchannels C
//!   nthreads 512` (2.28+: `nWorks 1` after).

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::Mutex;

use super::api::out;
use super::comm::{comm_of, Comm};
use super::setup::param;
use super::{version, NcclResult, Version, INVALID_ARGUMENT, INVALID_USAGE, SUCCESS};
use crate::driver;
use crate::log;
use crate::nccl::tuner::Func;

/// NCCL's symmetric kernels (`enum ncclSymKernelId`), in its order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    AllReduceAgxLlR,
    AllReduceAgxLlmcR,
    AllReduceRsxLdAgxSt,
    AllReduceRsxLdmcAgxStmc,
    AllGatherLl,
    AllGatherLlmc,
    AllGatherSt,
    AllGatherStmc,
    ReduceScatterLl,
    ReduceScatterLd,
    ReduceScatterLdmc,
}

use Kernel::*;

const KERNELS: [Kernel; 11] = [
    AllReduceAgxLlR,
    AllReduceAgxLlmcR,
    AllReduceRsxLdAgxSt,
    AllReduceRsxLdmcAgxStmc,
    AllGatherLl,
    AllGatherLlmc,
    AllGatherSt,
    AllGatherStmc,
    ReduceScatterLl,
    ReduceScatterLd,
    ReduceScatterLdmc,
];

impl Kernel {
    /// `kernelName[]`, as the TUNING line prints it and `NCCL_SYM_KERNEL` takes it.
    pub fn name(self) -> &'static str {
        match self {
            AllReduceAgxLlR => "AllReduce_AGxLL_R",
            AllReduceAgxLlmcR => "AllReduce_AGxLLMC_R",
            AllReduceRsxLdAgxSt => "AllReduce_RSxLD_AGxST",
            AllReduceRsxLdmcAgxStmc => "AllReduce_RSxLDMC_AGxSTMC",
            AllGatherLl => "AllGather_LL",
            AllGatherLlmc => "AllGather_LLMC",
            AllGatherSt => "AllGather_ST",
            AllGatherStmc => "AllGather_STMC",
            ReduceScatterLl => "ReduceScatter_LL",
            ReduceScatterLd => "ReduceScatter_LD",
            ReduceScatterLdmc => "ReduceScatter_LDMC",
        }
    }

    fn func(self) -> Func {
        match self {
            AllReduceAgxLlR | AllReduceAgxLlmcR | AllReduceRsxLdAgxSt | AllReduceRsxLdmcAgxStmc => {
                Func::AllReduce
            }
            AllGatherLl | AllGatherLlmc | AllGatherSt | AllGatherStmc => Func::AllGather,
            _ => Func::ReduceScatter,
        }
    }

    /// Multicast stores (`kernelMask_STMC`): NVLS needed.
    fn stores_multicast(self) -> bool {
        matches!(
            self,
            AllGatherLlmc
                | AllGatherStmc
                | AllReduceAgxLlmcR
                | AllReduceRsxLdmcAgxStmc
                | ReduceScatterLdmc
        )
    }

    /// Multicast loads (`kernelMask_LDMC`): NVLS reducing the type and operator.
    fn loads_multicast(self) -> bool {
        matches!(self, AllReduceRsxLdmcAgxStmc | ReduceScatterLdmc)
    }

    fn ll(self) -> bool {
        matches!(
            self,
            AllReduceAgxLlR | AllReduceAgxLlmcR | AllGatherLl | AllGatherLlmc | ReduceScatterLl
        )
    }
}

/// The kernel NCCL picks, its blocks (the line's `nchannels`) and its model time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pick {
    pub kernel: Kernel,
    pub blocks: u32,
    pub time_us: f64,
}

/// `ncclSymMaxBlocks`.
const MAX_BLOCKS: u32 = 64;
/// Threads per block: 16 warps.
pub const THREADS: u32 = 512;

// NCCL's data types and reduction operators (nccl.h).
const INT32: i32 = 2;
const UINT32: i32 = 3;
const INT64: i32 = 4;
const UINT64: i32 = 5;
const FLOAT16: i32 = 6;
const FLOAT32: i32 = 7;
const FLOAT64: i32 = 8;
const BFLOAT16: i32 = 9;
const SUM: i32 = 0;
const MAX: i32 = 2;
const MIN: i32 = 3;

/// `ncclSymImplemented`: all-gather of anything; all-reduce and reduce-scatter of
/// sums of floating types other than double.
pub fn implemented(f: Func, dtype: i32, op: i32) -> bool {
    let float = matches!(dtype, FLOAT16 | FLOAT32 | FLOAT64 | BFLOAT16 | 10 | 11);
    match f {
        Func::AllGather => true,
        Func::AllReduce | Func::ReduceScatter => op == SUM && float && dtype != FLOAT64,
        _ => false,
    }
}

/// smooth min(x, ceiling).
fn softmin(x: f64, ceiling: f64, softness: f64) -> f64 {
    ceiling
        - softness
            * ((ceiling / softness).exp() - 1.0)
                .mul_add((-x / softness).exp(), 1.0)
                .ln()
}

/// smooth max(0, x).
fn softplus(x: f64, softness: f64) -> f64 {
    let z = x / softness;
    if z >= 100.0 {
        x
    } else {
        softness * z.exp().ln_1p()
    }
}

fn model(
    bus_bytes: f64,
    base_lat: f64,
    blocks: u32,
    sm_bw: f64,
    multiplier: f64,
    peak: f64,
) -> f64 {
    let bw = softmin(f64::from(blocks) * sm_bw * multiplier, peak, sm_bw);
    base_lat + softplus(bus_bytes / bw - 1.0, 1.0)
}

/// `queryModel` on a GPU before Blackwell (`cudaArch < 1000`): the fewest blocks
/// within 2.5 % of the most, and their time (us).
fn query(k: Kernel, nranks: u32, bytes: u64) -> (u32, f64) {
    const LL_BUS_FACTOR: f64 = 9.0;
    let n = f64::from(nranks);
    let b = bytes as f64;
    let nvls_blocks = 16u32.div_ceil(nranks);
    let (bus, multiplier, max_blocks) = match k {
        AllReduceAgxLlR | AllGatherLl | ReduceScatterLl => (n * b * LL_BUS_FACTOR, 1.0, MAX_BLOCKS),
        AllReduceAgxLlmcR | AllGatherLlmc => (n * b * LL_BUS_FACTOR, 1.1, MAX_BLOCKS),
        AllReduceRsxLdAgxSt => (2.0 * b * (n - 1.0) / n, 1.0, MAX_BLOCKS),
        AllReduceRsxLdmcAgxStmc => (b / n + b, n, nvls_blocks),
        AllGatherSt | ReduceScatterLd => ((n - 1.0) * b, 1.0, MAX_BLOCKS),
        AllGatherStmc | ReduceScatterLdmc => ((n - 1.0) * b, 0.55 * n, nvls_blocks),
    };
    let gbps = f64::from(1u32 << 30) / 1e6;
    let base_lat = if k.ll() { 4.5 } else { 7.8 };
    let sm_bw = if k.func() == Func::AllReduce {
        65.0
    } else {
        44.0
    } * gbps;
    let peak = if k == AllReduceRsxLdmcAgxStmc {
        480.0
    } else {
        320.0
    } * gbps;
    let best = model(bus, base_lat, max_blocks, sm_bw, multiplier, peak);
    for blocks in 1..max_blocks {
        let t = model(bus, base_lat, blocks, sm_bw, multiplier, peak);
        if t <= 1.025 * best {
            return (blocks, t);
        }
    }
    (max_blocks, best)
}

/// `ncclSymPickKernel`: the kernel of least time with a 2.5 % penalty per block,
/// among those of `f` that `NCCL_SYM_KERNEL` allows, the multicast ones only with
/// NVLS (loads also only for the types and operators NVLS reduces), LL ones only
/// under 2 GiB. `None`: no kernel (NCCL runs the collective as usual).
pub fn pick(
    f: Func,
    dtype: i32,
    op: i32,
    count: u64,
    width: u64,
    nranks: u32,
    nvls: bool,
) -> Option<Pick> {
    let ldmc = nvls
        && match dtype {
            INT32 | UINT32 | INT64 | UINT64 | FLOAT16 | BFLOAT16 => {
                op == SUM || op == MAX || op == MIN
            }
            FLOAT32 | FLOAT64 => op == SUM,
            _ => false,
        };
    let user = crate::env("NCCL_SYM_KERNEL").filter(|k| k != "^");
    let bytes = count * width;
    let bus_bytes = if f == Func::AllReduce {
        bytes
    } else {
        u64::from(nranks) * bytes
    };
    let mut best: Option<Pick> = None;
    for k in KERNELS {
        if k.func() != f
            || user.as_deref().is_some_and(|u| u != k.name())
            || (k.stores_multicast() && !nvls)
            || (k.loads_multicast() && !ldmc)
            || (k.ll() && bus_bytes >= 2 << 30)
            || bus_bytes >= 32 * (2 << 30)
        {
            continue;
        }
        let (blocks, time_us) = query(k, nranks, bytes);
        let cost = |p: &Pick| p.time_us * (1.0 + 0.025 * f64::from(p.blocks));
        let this = Pick {
            kernel: k,
            blocks,
            time_us,
        };
        if best.as_ref().is_none_or(|b| cost(&this) < cost(b)) {
            best = Some(this);
        }
    }
    best
}

/// The TUNING line of a symmetric kernel (`bytes`: count x type size).
pub fn line(v: Version, f: Func, bytes: u64, p: &Pick) -> String {
    let works = if v >= (2, 28, 0) { " nWorks 1" } else { "" };
    format!(
        "{} [Symmetric]: {bytes} Bytes -> Kernel {} nchannels {} nthreads {THREADS}{works}",
        f.name(),
        p.kernel.name(),
        p.blocks
    )
}

/// A registered buffer.
#[derive(Debug, Clone, Copy)]
struct Registered {
    comm: usize,
    len: u64,
    window: bool,
}

#[derive(Default)]
struct Registry {
    /// `ncclMemAlloc`'s allocations: start, length.
    allocations: BTreeMap<u64, u64>,
    /// By start address, each registration.
    buffers: BTreeMap<u64, Vec<Registered>>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    allocations: BTreeMap::new(),
    buffers: BTreeMap::new(),
});

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether `[ptr, ptr + bytes)` lies in a symmetric window of communicator `comm`.
pub fn in_window(comm: &Comm, ptr: u64, bytes: u64) -> bool {
    let id = comm as *const Comm as usize;
    registry().buffers.range(..=ptr).any(|(&start, regs)| {
        regs.iter()
            .any(|r| r.comm == id && r.window && ptr + bytes <= start + r.len)
    })
}

fn since(v: Version, first: Version, name: &str) -> Result<(), NcclResult> {
    if v >= first {
        return Ok(());
    }
    super::warn(
        0,
        "init.cc:1",
        &format!("{name} is not in NCCL {}.{}.{}", v.0, v.1, v.2),
    );
    Err(INVALID_USAGE)
}

#[no_mangle]
pub extern "C" fn ncclMemAlloc(ptr: *mut *mut c_void, size: usize) -> NcclResult {
    if let Err(code) = since(version(), (2, 19, 0), "ncclMemAlloc") {
        return code;
    }
    if ptr.is_null() {
        return INVALID_ARGUMENT;
    }
    match driver::alloc(size) {
        Ok(p) => {
            registry().allocations.insert(p, size as u64);
            out(ptr, p as *mut c_void)
        }
        Err(_) => {
            super::warn(0, "allocator.cc:64", "Cuda failure 2 'out of memory'");
            super::UNHANDLED_CUDA_ERROR
        }
    }
}

#[no_mangle]
pub extern "C" fn ncclMemFree(ptr: *mut c_void) -> NcclResult {
    if ptr.is_null() {
        return SUCCESS;
    }
    registry().allocations.remove(&(ptr as u64));
    match driver::free(ptr as u64) {
        Ok(()) => SUCCESS,
        Err(_) => INVALID_ARGUMENT,
    }
}

/// Records a registration of `buff` and hands out its handle.
fn register(
    comm: *mut c_void,
    buff: *mut c_void,
    size: usize,
    window: bool,
) -> Result<*mut c_void, NcclResult> {
    let c = comm_of(comm).ok_or(INVALID_ARGUMENT)?;
    if buff.is_null() || size == 0 {
        return Err(INVALID_ARGUMENT);
    }
    let start = buff as u64;
    let reg = Registered {
        comm: std::sync::Arc::as_ptr(&c) as usize,
        len: size as u64,
        window,
    };
    registry().buffers.entry(start).or_default().push(reg);
    log::info(
        log::REG,
        c.device,
        &format!("register comm {comm:p} buffer {buff:p} size {size}"),
    );
    Ok(Box::into_raw(Box::new((start, reg))) as *mut c_void)
}

fn deregister(comm: *mut c_void, handle: *mut c_void) -> NcclResult {
    if comm_of(comm).is_none() {
        return INVALID_ARGUMENT;
    }
    if handle.is_null() {
        return SUCCESS;
    }
    // SAFETY: a handle `register` made (Box::into_raw), given back once.
    let (start, reg) = *unsafe { Box::from_raw(handle as *mut (u64, Registered)) };
    let mut r = registry();
    if let Some(list) = r.buffers.get_mut(&start) {
        if let Some(i) = list
            .iter()
            .position(|x| x.comm == reg.comm && x.window == reg.window)
        {
            list.remove(i);
        }
        if list.is_empty() {
            r.buffers.remove(&start);
        }
    }
    SUCCESS
}

#[no_mangle]
pub extern "C" fn ncclCommRegister(
    comm: *mut c_void,
    buff: *mut c_void,
    size: usize,
    handle: *mut *mut c_void,
) -> NcclResult {
    if let Err(code) = since(version(), (2, 19, 0), "ncclCommRegister") {
        return code;
    }
    if handle.is_null() {
        return INVALID_ARGUMENT;
    }
    match register(comm, buff, size, false) {
        Ok(h) => out(handle, h),
        Err(code) => code,
    }
}

#[no_mangle]
pub extern "C" fn ncclCommDeregister(comm: *mut c_void, handle: *mut c_void) -> NcclResult {
    deregister(comm, handle)
}

#[no_mangle]
pub extern "C" fn ncclCommWindowRegister(
    comm: *mut c_void,
    buff: *mut c_void,
    size: usize,
    win: *mut *mut c_void,
    flags: i32,
) -> NcclResult {
    if let Err(code) = since(version(), (2, 27, 0), "ncclCommWindowRegister") {
        return code;
    }
    if out(win, std::ptr::null_mut()) != SUCCESS {
        return INVALID_ARGUMENT;
    }
    let Some(c) = comm_of(comm) else {
        return INVALID_ARGUMENT;
    };
    // From 2.29 (`dev_runtime.cc`) nothing is registered without symmetric support
    // either, whatever the flags (NVIDIA/nccl#1963).
    let unsupported = version() >= (2, 29, 0) && !c.plan().symmetric;
    if param("LOCAL_REGISTER", 1) == 0 || !c.plan().cumem || unsupported {
        return SUCCESS;
    }
    let start = buff as u64;
    let aligned = registry()
        .allocations
        .range(..=start)
        .next_back()
        .is_some_and(|(&a, &len)| start + size as u64 <= a + len);
    if !aligned {
        super::warn(
            c.device,
            "register/register.cc:221",
            &format!(
                "buffer {buff:p} (baseAddr {buff:p} align 0) size {size} (baseSize {size} align 0) does not satisfy symmetric registration requirements"
            ),
        );
        return SUCCESS;
    }
    match register(comm, buff, size, flags & 1 != 0) {
        Ok(h) => out(win, h),
        Err(code) => code,
    }
}

#[no_mangle]
pub extern "C" fn ncclCommWindowDeregister(comm: *mut c_void, win: *mut c_void) -> NcclResult {
    deregister(comm, win)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_all_reduces_take_ll_and_large_ones_multicast_on_nvls() {
        // 8 H100s with NVLS: LL multicast for small, LDMC/STMC for large.
        let small = pick(Func::AllReduce, FLOAT32, SUM, 1024, 4, 8, true).unwrap();
        assert_eq!(small.kernel, AllReduceAgxLlmcR, "{small:?}");
        let large = pick(Func::AllReduce, FLOAT32, SUM, 64 << 20, 4, 8, true).unwrap();
        assert_eq!(large.kernel, AllReduceRsxLdmcAgxStmc, "{large:?}");
        assert_eq!(large.blocks, 2, "16 NVLS blocks over 8 ranks at most");
        // Without NVLS: plain LL, then loads and stores.
        let small = pick(Func::AllReduce, FLOAT32, SUM, 1024, 4, 8, false).unwrap();
        assert_eq!(small.kernel, AllReduceAgxLlR);
        let large = pick(Func::AllReduce, FLOAT32, SUM, 64 << 20, 4, 8, false).unwrap();
        assert_eq!(large.kernel, AllReduceRsxLdAgxSt);
        // 256 MiB of float at 320 GB/s peak: bus bytes 2*(7/8)*256 MiB over ~343 GB/s.
        assert!((1_300.0..1_500.0).contains(&large.time_us), "{large:?}");
        // The latency floor is the kernel's base latency.
        assert!(small.time_us >= 4.5 && small.time_us < 6.0, "{small:?}");
    }

    #[test]
    fn only_what_the_kernels_implement() {
        assert!(implemented(Func::AllReduce, FLOAT32, SUM));
        assert!(implemented(Func::AllGather, INT32, MAX));
        assert!(!implemented(Func::AllReduce, FLOAT64, SUM));
        assert!(!implemented(Func::AllReduce, INT32, SUM));
        assert!(!implemented(Func::AllReduce, FLOAT32, MAX));
        assert!(!implemented(Func::Broadcast, FLOAT32, SUM));
        let p = Pick {
            kernel: AllReduceAgxLlR,
            blocks: 4,
            time_us: 5.0,
        };
        assert_eq!(
            line((2, 27, 3), Func::AllReduce, 4096, &p),
            "AllReduce [Symmetric]: 4096 Bytes -> Kernel AllReduce_AGxLL_R nchannels 4 nthreads 512"
        );
        assert!(line((2, 28, 9), Func::AllReduce, 4096, &p).ends_with("nthreads 512 nWorks 1"));
    }
}
