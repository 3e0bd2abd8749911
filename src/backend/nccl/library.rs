//! Layer 2: libnccl calls as `Result`s. An error keeps NCCL's numeric code, its
//! `ncclGetErrorString` text and, where the library has it, `ncclGetLastError`, the
//! sentence that actually says what went wrong ("Cuda failure 'CUDA driver version is
//! insufficient for CUDA runtime version'").

use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::nccl::register::Registration;
use crate::nccl::NcclVersion;
use crate::ops::collective::Collective;

use super::ffi::{self, LoadError, Loaded, NcclResult, RawComm, UniqueIdRaw, UNIQUE_ID_BYTES};

/// `ncclResult_t` names, indexed by code.
const RESULT_NAMES: [&str; 9] = [
    "ncclSuccess",
    "ncclUnhandledCudaError",
    "ncclSystemError",
    "ncclInternalError",
    "ncclInvalidArgument",
    "ncclInvalidUsage",
    "ncclRemoteError",
    "ncclInProgress",
    "ncclTimeout",
];

/// `ncclInProgress`: a non-blocking communicator is still working on the call.
pub const IN_PROGRESS: NcclResult = 7;

pub fn result_name(code: NcclResult) -> &'static str {
    usize::try_from(code)
        .ok()
        .and_then(|i| RESULT_NAMES.get(i))
        .copied()
        .unwrap_or("unknown ncclResult_t")
}

#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum NcclError {
    #[error("cannot load {path}: {message}")]
    Load { path: PathBuf, message: String },
    #[error("{path} has no symbol {symbol}: it is not a usable libnccl")]
    MissingSymbol { path: PathBuf, symbol: &'static str },
    #[error("{call} failed: {name} ({code}): {text}{}", last_error.as_ref().map(|l| format!("; last error: {l}")).unwrap_or_default())]
    Call {
        call: &'static str,
        code: NcclResult,
        name: &'static str,
        text: String,
        last_error: Option<String>,
    },
    #[error("{call} was still in progress after {waited_ms} ms (the worker's deadline, just before --timeout); the communicator is aborted (ncclCommAbort) once this is reported")]
    Stuck { call: &'static str, waited_ms: u64 },
}

/// The 128 opaque bytes rank 0 creates and every rank passes to init.
#[derive(Clone, Copy)]
pub struct UniqueId(pub UniqueIdRaw);

impl UniqueId {
    /// Hex text, for the orchestrator to relay.
    pub fn to_hex(&self) -> String {
        self.0
            .internal
            .iter()
            .map(|&b| format!("{:02x}", b as u8))
            .collect()
    }

    pub fn from_hex(text: &str) -> Option<UniqueId> {
        let t = text.trim();
        if t.len() != UNIQUE_ID_BYTES * 2 || !t.is_ascii() {
            return None;
        }
        let mut raw = UniqueIdRaw {
            internal: [0; UNIQUE_ID_BYTES],
        };
        for (i, byte) in raw.internal.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&t[2 * i..2 * i + 2], 16).ok()? as std::ffi::c_char;
        }
        Some(UniqueId(raw))
    }
}

/// How a library runs a collective ([`Nccl::runs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runs {
    /// Its own call (`ncclAllGather`, `ncclAlltoAll`, ...).
    Native,
    /// `ncclSend` and `ncclRecv` to each peer inside `ncclGroupStart`/`ncclGroupEnd`.
    Grouped,
    /// Not at all: a symbol it needs is missing.
    Missing,
}

/// A loaded libnccl.
pub struct Nccl {
    loaded: Loaded,
    pub path: PathBuf,
}

impl Nccl {
    /// Whether this is the simulated-GPU test stand-in rather than NCCL.
    pub fn simulated(&self) -> bool {
        self.loaded.simulated
    }

    pub fn load(path: &Path) -> Result<Nccl, NcclError> {
        match Loaded::open(path) {
            Ok(loaded) => Ok(Nccl {
                loaded,
                path: path.to_path_buf(),
            }),
            Err(LoadError::Open(message)) => Err(NcclError::Load {
                path: path.to_path_buf(),
                message,
            }),
            Err(LoadError::MissingSymbol(symbol)) => Err(NcclError::MissingSymbol {
                path: path.to_path_buf(),
                symbol,
            }),
        }
    }

    fn sym(&self) -> &ffi::Symbols {
        &self.loaded.symbols
    }

    /// How the library runs `collective`: with its own call, with grouped
    /// `ncclSend`/`ncclRecv` as nccl-tests builds alltoall, gather and scatter before
    /// NCCL 2.28 had them, or not at all (a symbol missing).
    pub fn runs(&self, collective: Collective) -> Runs {
        let s = self.sym();
        let grouped = s.send.is_some()
            && s.recv.is_some()
            && s.group_start.is_some()
            && s.group_end.is_some();
        let native = match collective {
            Collective::AllReduce => true,
            Collective::AllGather => s.all_gather.is_some(),
            Collective::ReduceScatter => s.reduce_scatter.is_some(),
            Collective::Broadcast => s.broadcast.is_some(),
            Collective::Reduce => s.reduce.is_some(),
            Collective::SendRecv => grouped,
            // Their symbols came in 2.28; a library of another version that has
            // them (a stand-in) is used as that version would be.
            Collective::AllToAll => s.all_to_all.is_some() && self.since_2_28(),
            Collective::Gather => s.gather.is_some() && self.since_2_28(),
            Collective::Scatter => s.scatter.is_some() && self.since_2_28(),
        };
        match collective {
            Collective::SendRecv if native => Runs::Grouped,
            _ if native => Runs::Native,
            Collective::AllToAll | Collective::Gather | Collective::Scatter if grouped => {
                Runs::Grouped
            }
            _ => Runs::Missing,
        }
    }

    fn since_2_28(&self) -> bool {
        self.version().is_ok_and(|v| (v.major, v.minor) >= (2, 28))
    }

    /// `ncclGetErrorString`.
    pub fn error_string(&self, code: NcclResult) -> String {
        // SAFETY: ncclGetErrorString accepts any value and returns a static string.
        unsafe { ffi::c_text((self.sym().get_error_string)(code)) }.unwrap_or_default()
    }

    /// `ncclGetLastError` (for `comm`, or the last error of any call when null).
    pub(crate) fn last_error(&self, comm: RawComm) -> Option<String> {
        let f = self.sym().get_last_error?;
        // SAFETY: `comm` is NULL or a live communicator (callers own it), as the API
        // allows; the text is NCCL's static buffer, copied at once.
        unsafe { ffi::c_text(f(comm)) }
    }

    /// Turns a return code into a `Result`.
    pub(crate) fn check(
        &self,
        call: &'static str,
        code: NcclResult,
        comm: RawComm,
    ) -> Result<(), NcclError> {
        if code == 0 {
            return Ok(());
        }
        Err(self.call_error(call, code, comm))
    }

    /// The error for `call` having returned (or reported) `code`.
    pub(crate) fn call_error(
        &self,
        call: &'static str,
        code: NcclResult,
        comm: RawComm,
    ) -> NcclError {
        NcclError::Call {
            call,
            code,
            name: result_name(code),
            text: self.error_string(code),
            last_error: self.last_error(comm),
        }
    }

    pub fn version(&self) -> Result<NcclVersion, NcclError> {
        let mut code = 0;
        // SAFETY: writes one int.
        let rc = unsafe { (self.sym().get_version)(&mut code) };
        self.check("ncclGetVersion", rc, std::ptr::null_mut())?;
        Ok(NcclVersion::from_code(code))
    }

    pub fn unique_id(&self) -> Result<UniqueId, NcclError> {
        let mut raw = UniqueIdRaw {
            internal: [0; UNIQUE_ID_BYTES],
        };
        // SAFETY: writes the 128-byte struct.
        let rc = unsafe { (self.sym().get_unique_id)(&mut raw) };
        self.check("ncclGetUniqueId", rc, std::ptr::null_mut())?;
        Ok(UniqueId(raw))
    }

    /// `ncclCommInitRank` as NCCL returns it: the code and the communicator, which
    /// may be non-null even when the code is not success (non-blocking init returns
    /// `ncclInProgress`; a failed init can leave a half-built communicator to abort).
    /// The caller owns the communicator (see `comm`).
    pub fn comm_init_rank(&self, nranks: u32, id: &UniqueId, rank: u32) -> (NcclResult, RawComm) {
        let mut comm: RawComm = std::ptr::null_mut();
        // SAFETY: comm is an out-parameter; the id is passed by value as declared.
        let rc =
            unsafe { (self.sym().comm_init_rank)(&mut comm, nranks as i32, id.0, rank as i32) };
        (rc, comm)
    }

    /// The calls `register` needs that this library does not export, in the order a
    /// rank makes them (`Registration::calls`).
    pub fn lacks(&self, register: Registration) -> Vec<&'static str> {
        let s = self.sym();
        let has = |name: &str| match name {
            "ncclMemAlloc" => s.mem_alloc.is_some(),
            "ncclMemFree" => s.mem_free.is_some(),
            "ncclCommRegister" => s.comm_register.is_some(),
            "ncclCommDeregister" => s.comm_deregister.is_some(),
            "ncclCommWindowRegister" => s.comm_window_register.is_some(),
            "ncclCommWindowDeregister" => s.comm_window_deregister.is_some(),
            _ => false,
        };
        // A library of an older release that has them (a stand-in) is used as that
        // release would be.
        let version = self.version().ok().map(|v| (v.major, v.minor));
        register
            .calls()
            .iter()
            .filter(|(name, since)| !has(name) || version.is_some_and(|v| v < *since))
            .map(|(name, _)| *name)
            .collect()
    }

    /// `ncclMemAlloc`: device memory NCCL can map into its peers (cuMem with the
    /// handle types NCCL needs), the kind registration wants.
    pub fn mem_alloc(&self, bytes: usize) -> Result<*mut std::ffi::c_void, NcclError> {
        let f = self.sym().mem_alloc.ok_or(NcclError::MissingSymbol {
            path: self.path.clone(),
            symbol: "ncclMemAlloc",
        })?;
        let mut ptr = std::ptr::null_mut();
        // SAFETY: writes one pointer.
        let rc = unsafe { f(&mut ptr, bytes) };
        self.check("ncclMemAlloc", rc, std::ptr::null_mut())?;
        Ok(ptr)
    }

    /// `ncclMemFree` of what [`Nccl::mem_alloc`] returned.
    ///
    /// # Safety
    /// `ptr` came from `mem_alloc` of this library and is freed once, with nothing
    /// (no communicator registration, no stream) still using it.
    pub unsafe fn mem_free(&self, ptr: *mut std::ffi::c_void) -> Result<(), NcclError> {
        let Some(f) = self.sym().mem_free else {
            return Ok(());
        };
        let rc = f(ptr);
        self.check("ncclMemFree", rc, std::ptr::null_mut())
    }

    pub(crate) fn symbols(&self) -> &ffi::Symbols {
        self.sym()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_ids_round_trip_through_hex() {
        let mut raw = UniqueIdRaw {
            internal: [0; UNIQUE_ID_BYTES],
        };
        for (i, b) in raw.internal.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37) as std::ffi::c_char;
        }
        let hex = UniqueId(raw).to_hex();
        assert_eq!(hex.len(), 256);
        let back = UniqueId::from_hex(&hex).unwrap();
        assert_eq!(back.0.internal, raw.internal);
        assert!(UniqueId::from_hex("abc").is_none());
        assert!(UniqueId::from_hex(&"zz".repeat(128)).is_none());
    }

    #[test]
    fn result_names_follow_nccl_h() {
        assert_eq!(result_name(1), "ncclUnhandledCudaError");
        assert_eq!(result_name(8), "ncclTimeout");
        assert_eq!(result_name(42), "unknown ncclResult_t");
    }

    #[test]
    fn a_missing_library_is_a_load_error() {
        let err = Nccl::load(Path::new("/nonexistent/libnccl.so.2"))
            .err()
            .unwrap();
        assert!(matches!(err, NcclError::Load { .. }), "{err}");
    }

    #[test]
    fn a_library_without_nccl_symbols_is_refused() {
        // libc is always there and certainly has no ncclGetVersion.
        let err = Nccl::load(Path::new("libc.so.6")).err().unwrap();
        assert_eq!(
            err.to_string(),
            "libc.so.6 has no symbol ncclGetVersion: it is not a usable libnccl"
        );
    }
}
