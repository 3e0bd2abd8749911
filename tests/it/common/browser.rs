//! A real browser for the HTML tests: headless Chromium driven over the DevTools
//! protocol on a pipe (`--remote-debugging-pipe`: commands as JSON on the browser's
//! fd 3, replies and events on its fd 4, each message ended by a NUL byte). What a
//! page logs as an error, throws, or fetches from anywhere but the file itself is
//! collected, and clicks are real mouse events at a point of the rendered page.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// How long any one command may take.
const PATIENCE: Duration = Duration::from_secs(60);

pub struct Browser {
    child: Child,
    to: File,
    from: Receiver<Value>,
    next_id: u64,
    session: String,
    /// Every event of the page, in the order they came.
    pub events: Vec<Value>,
    _profile: tempfile::TempDir,
}

/// A pipe whose ends close on exec.
fn pipe() -> (RawFd, RawFd) {
    let mut fds = [0; 2];
    // SAFETY: `fds` is two ints, as pipe2 needs.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(rc, 0, "pipe2: {}", std::io::Error::last_os_error());
    (fds[0], fds[1])
}

impl Browser {
    /// Starts `chromium` headless with a fresh profile and a page of `width` x
    /// `height` pixels, attached to one blank tab.
    pub fn start(chromium: &Path, width: u32, height: u32) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let (cmd_read, cmd_write) = pipe();
        let (out_read, out_write) = pipe();
        let mut command = Command::new(chromium);
        command
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--remote-debugging-pipe",
                "--hide-scrollbars",
            ])
            .arg(format!("--window-size={width},{height}"))
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: between fork and exec only async-signal-safe calls (fcntl, dup2)
        // on descriptors this process owns.
        unsafe {
            command.pre_exec(move || {
                // Copies above 10 first, so that a pipe end already at 3 or 4 is not
                // overwritten before it is moved; dup2 clears close-on-exec.
                let cmd = libc::fcntl(cmd_read, libc::F_DUPFD_CLOEXEC, 10);
                let out = libc::fcntl(out_write, libc::F_DUPFD_CLOEXEC, 10);
                if cmd < 0 || out < 0 || libc::dup2(cmd, 3) < 0 || libc::dup2(out, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().expect("cannot start chromium");
        // SAFETY: these descriptors came from pipe2 above and are owned here alone.
        let (to, from_file) = unsafe {
            libc::close(cmd_read);
            libc::close(out_write);
            (File::from_raw_fd(cmd_write), File::from_raw_fd(out_read))
        };
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(from_file);
            let mut message = Vec::new();
            while reader.read_until(0, &mut message).is_ok_and(|n| n > 0) {
                if message.last() == Some(&0) {
                    message.pop();
                }
                if let Ok(v) = serde_json::from_slice::<Value>(&message) {
                    if tx.send(v).is_err() {
                        break;
                    }
                }
                message.clear();
            }
        });
        let mut b = Browser {
            child,
            to,
            from: rx,
            next_id: 0,
            session: String::new(),
            events: Vec::new(),
            _profile: profile,
        };
        let target = b.browser_call("Target.createTarget", json!({"url": "about:blank"}));
        let id = target["targetId"].as_str().unwrap().to_string();
        let attached = b.browser_call(
            "Target.attachToTarget",
            json!({"targetId": id, "flatten": true}),
        );
        b.session = attached["sessionId"].as_str().unwrap().to_string();
        for domain in [
            "Page.enable",
            "Runtime.enable",
            "Log.enable",
            "Network.enable",
        ] {
            b.call(domain, json!({}));
        }
        b.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}),
        );
        b
    }

    fn send(&mut self, method: &str, params: Value, session: bool) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if session {
            message["sessionId"] = json!(self.session);
        }
        let mut bytes = serde_json::to_vec(&message).unwrap();
        bytes.push(0);
        self.to.write_all(&bytes).unwrap();
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self
                .from
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("{method}: no reply from chromium ({e})"));
            if v["id"].as_u64() == Some(id) {
                if let Some(err) = v.get("error") {
                    panic!("{method}: {err}");
                }
                return v["result"].clone();
            }
            self.events.push(v);
        }
    }

    fn browser_call(&mut self, method: &str, params: Value) -> Value {
        self.send(method, params, false)
    }

    /// A command to the page.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.send(method, params, true)
    }

    /// Waits for the page's event `method` that came after event number `after`.
    fn wait_for(&mut self, method: &str, after: usize) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if self.events[after.min(self.events.len())..]
                .iter()
                .any(|e| e["method"] == method)
            {
                return;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self
                .from
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no {method} from chromium ({e})"));
            self.events.push(v);
        }
    }

    /// Cuts the page off the network: every request but the file itself fails.
    pub fn offline(&mut self) {
        self.call(
            "Network.emulateNetworkConditions",
            json!({"offline": true, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1}),
        );
    }

    /// Opens `file` and waits until it has loaded (its scripts have run).
    pub fn open(&mut self, file: &Path) {
        let path = file.canonicalize().unwrap().display().to_string();
        let url = format!(
            "file://{}",
            path.replace('%', "%25")
                .replace(' ', "%20")
                .replace('#', "%23")
        );
        let before = self.events.len();
        let r = self.call("Page.navigate", json!({"url": url}));
        assert!(r.get("errorText").is_none(), "{url}: {r}");
        self.wait_for("Page.loadEventFired", before);
    }

    /// The value of a JavaScript expression on the page.
    pub fn eval(&mut self, expression: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        );
        if let Some(e) = r.get("exceptionDetails") {
            panic!("{expression}: {e}");
        }
        r["result"]["value"].clone()
    }

    /// A left click with the mouse at (x, y) of the page's viewport.
    pub fn click(&mut self, x: f64, y: f64) {
        for kind in ["mouseMoved", "mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            );
        }
    }

    /// What went wrong on the page: console errors, uncaught exceptions, log entries
    /// at error level (a refused script or resource among them), and requests for
    /// anything but `file://` and `data:` URLs.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        for e in &self.events {
            let p = &e["params"];
            match e["method"].as_str().unwrap_or("") {
                "Runtime.exceptionThrown" => {
                    out.push(format!("exception: {}", p["exceptionDetails"]))
                }
                "Runtime.consoleAPICalled" if p["type"] == "error" => {
                    out.push(format!("console error: {}", p["args"]))
                }
                "Log.entryAdded" if p["entry"]["level"] == "error" => {
                    out.push(format!("log: {}", p["entry"]["text"]))
                }
                "Network.requestWillBeSent" => {
                    let url = p["request"]["url"].as_str().unwrap_or("");
                    if !(url.starts_with("file://") || url.starts_with("data:")) {
                        out.push(format!("request: {url}"));
                    }
                }
                "Network.loadingFailed" => out.push(format!("failed to load: {p}")),
                _ => {}
            }
        }
        out
    }

    /// A PNG of what the viewport shows.
    pub fn screenshot(&mut self) -> Vec<u8> {
        use base64::Engine as _;
        let r = self.call("Page.captureScreenshot", json!({"format": "png"}));
        base64::engine::general_purpose::STANDARD
            .decode(r["data"].as_str().unwrap())
            .unwrap()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
