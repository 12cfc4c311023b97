//! A small W3C WebDriver client over `reqwest` for the browser tests: it
//! starts `chromedriver` on a free loopback port, opens one headless Chromium
//! session with a phone-sized window, and drives it. Every step that fails
//! panics with the current URL, the text of the elements the test named with
//! `Browser::show_on_failure`, and the page source.

use std::future::Future;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// The key of a web element reference in WebDriver JSON.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Whether the browser tests can run here. Missing binaries fail the test
/// when `CI` is set; otherwise this prints why the test is skipped and
/// returns `false`.
pub fn browser_available(test: &str) -> bool {
    let missing: Vec<&str> =
        [CHROMIUM, CHROMEDRIVER].into_iter().filter(|p| !std::path::Path::new(p).exists()).collect();
    if missing.is_empty() {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!(
            "{test}: {} missing and CI is set; install Debian's chromium and chromium-driver",
            missing.join(" and ")
        );
    }
    eprintln!(
        "SKIPPED {test}: {} missing (apt-get install chromium chromium-driver); set CI=1 to make this fail",
        missing.join(" and ")
    );
    false
}

/// A WebDriver error or transport failure.
#[derive(Debug, Clone)]
pub struct WdError(pub String);

impl std::fmt::Display for WdError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

pub type WdResult<T> = Result<T, WdError>;

/// One chromedriver process and the browser session it runs.
pub struct Browser {
    client: reqwest::Client,
    driver: Child,
    port: u16,
    session: String,
    /// How long `find` and the default waits poll.
    pub timeout: Duration,
    /// Selectors whose text (and `data-state`) every failure message shows.
    context: Vec<String>,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("bind a free port").local_addr().unwrap().port()
}

impl Browser {
    /// Starts chromedriver and a headless Chromium session (390x844).
    pub async fn start() -> Browser {
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(60))
            .build()
            .expect("webdriver http client");
        let mut last = String::new();
        for _ in 0..3 {
            let port = free_port();
            let driver = Command::new(CHROMEDRIVER)
                .arg(format!("--port={port}"))
                .arg("--allowed-ips=127.0.0.1")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                // Its own process group, so Drop can end Chromium with it.
                .process_group(0)
                .spawn()
                .unwrap_or_else(|e| panic!("spawn {CHROMEDRIVER}: {e}"));
            let mut browser = Browser {
                client: client.clone(),
                driver,
                port,
                session: String::new(),
                timeout: Duration::from_secs(10),
                context: Vec::new(),
            };
            match browser.open_session().await {
                Ok(session) => {
                    browser.session = session;
                    return browser;
                }
                Err(e) => last = e.0, // Drop ends this chromedriver.
            }
        }
        panic!("could not start a WebDriver session: {last}");
    }

    async fn open_session(&mut self) -> WdResult<String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(Some(status)) = self.driver.try_wait() {
                return Err(WdError(format!("chromedriver exited with {status}")));
            }
            let status = self.raw("GET", "/status", None).await;
            if status.is_ok_and(|v| v["ready"] == true) {
                break;
            }
            if Instant::now() > deadline {
                return Err(WdError("chromedriver was not ready within 20 s".into()));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let caps = json!({
            "capabilities": {
                "alwaysMatch": {
                    "browserName": "chrome",
                    "goog:chromeOptions": {
                        "binary": CHROMIUM,
                        "args": [
                            "--headless=new",
                            "--no-sandbox",
                            "--disable-gpu",
                            "--disable-dev-shm-usage",
                            "--window-size=390,844",
                        ],
                        // Desktop Chrome keeps windows at least 500 px wide;
                        // this gives the page a true 390 px phone viewport.
                        "mobileEmulation": {
                            "deviceMetrics": { "width": 390, "height": 844, "pixelRatio": 3.0, "touch": true },
                        },
                    },
                }
            }
        });
        let value = self.raw("POST", "/session", Some(caps)).await?;
        value["sessionId"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| WdError(format!("new session answered without sessionId: {value}")))
    }

    /// Failure messages also show the text of these elements (and their `data-state`).
    pub fn show_on_failure(&mut self, selectors: &[&str]) {
        self.context = selectors.iter().map(|s| s.to_string()).collect();
    }

    /// One WebDriver command; `path` is absolute (`/session/...`). Returns `value`.
    async fn raw(&self, method: &str, path: &str, body: Option<Value>) -> WdResult<Value> {
        let url = format!("http://127.0.0.1:{}{path}", self.port);
        let m = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut rb = self.client.request(m, &url);
        if let Some(body) = body {
            rb = rb.json(&body);
        } else if method == "POST" {
            rb = rb.json(&json!({}));
        }
        let response = rb.send().await.map_err(|e| WdError(format!("{method} {path}: {e}")))?;
        let status = response.status();
        let text = response.text().await.map_err(|e| WdError(format!("{method} {path}: body {e}")))?;
        let v: Value = serde_json::from_str(&text)
            .map_err(|_| WdError(format!("{method} {path} -> {status}: not JSON: {text}")))?;
        if !status.is_success() || v["value"]["error"].is_string() {
            let e = &v["value"];
            return Err(WdError(format!(
                "{method} {path} -> {status}: {}: {}",
                e["error"].as_str().unwrap_or("?"),
                e["message"].as_str().unwrap_or(&text)
            )));
        }
        Ok(v["value"].clone())
    }

    /// A command on this session (`path` relative to `/session/{id}`).
    async fn cmd(&self, method: &str, path: &str, body: Option<Value>) -> WdResult<Value> {
        self.raw(method, &format!("/session/{}{path}", self.session), body).await
    }

    /// The current URL, the context elements' text and the page source.
    pub async fn diagnostics(&self) -> String {
        let url = self.try_current_url().await.unwrap_or_else(|e| format!("<{e}>"));
        let mut out = format!("current URL: {url}\n");
        for css in &self.context {
            let shown = match self.try_find(css).await {
                Ok(Some(el)) => {
                    let text = el.try_text().await.unwrap_or_else(|e| format!("<{e}>"));
                    let state = el.try_attr("data-state").await.ok().flatten();
                    match state {
                        Some(s) => format!("data-state={s:?} text={text:?}"),
                        None => format!("text={text:?}"),
                    }
                }
                Ok(None) => "<absent>".into(),
                Err(e) => format!("<{e}>"),
            };
            out.push_str(&format!("{css}: {shown}\n"));
        }
        let source = self.try_source().await.unwrap_or_else(|e| format!("<{e}>"));
        out.push_str(&format!("page source:\n{source}"));
        out
    }

    /// Panics with `what` and the diagnostics.
    pub async fn fail(&self, what: &str) -> ! {
        let diagnostics = self.diagnostics().await;
        panic!("browser step failed: {what}\n{diagnostics}");
    }

    /// Unwraps a step's result or fails with the diagnostics.
    pub async fn ok<T>(&self, what: &str, r: WdResult<T>) -> T {
        match r {
            Ok(v) => v,
            Err(e) => self.fail(&format!("{what}: {e}")).await,
        }
    }

    pub async fn goto(&self, url: &str) {
        let r = self.cmd("POST", "/url", Some(json!({ "url": url }))).await;
        self.ok(&format!("goto {url}"), r.map(drop)).await
    }

    pub async fn try_current_url(&self) -> WdResult<String> {
        Ok(self.cmd("GET", "/url", None).await?.as_str().unwrap_or_default().to_string())
    }

    pub async fn current_url(&self) -> String {
        let r = self.try_current_url().await;
        self.ok("current url", r).await
    }

    pub async fn try_source(&self) -> WdResult<String> {
        Ok(self.cmd("GET", "/source", None).await?.as_str().unwrap_or_default().to_string())
    }

    pub async fn source(&self) -> String {
        let r = self.try_source().await;
        self.ok("page source", r).await
    }

    /// Runs `script` (a function body; `arguments` holds `args`) and returns its value.
    pub async fn try_execute(&self, script: &str, args: Vec<Value>) -> WdResult<Value> {
        self.cmd("POST", "/execute/sync", Some(json!({ "script": script, "args": args }))).await
    }

    pub async fn execute(&self, script: &str, args: Vec<Value>) -> Value {
        let r = self.try_execute(script, args).await;
        self.ok(&format!("execute {script}"), r).await
    }

    fn element(&self, v: &Value) -> WdResult<Element<'_>> {
        v[ELEMENT_KEY]
            .as_str()
            .map(|id| Element { browser: self, id: id.to_string() })
            .ok_or_else(|| WdError(format!("not an element reference: {v}")))
    }

    /// The first element matching `css` now, if any (no waiting).
    pub async fn try_find(&self, css: &str) -> WdResult<Option<Element<'_>>> {
        match self.cmd("POST", "/element", Some(json!({ "using": "css selector", "value": css }))).await {
            Ok(v) => self.element(&v).map(Some),
            Err(e) if e.0.contains("no such element") => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Every element matching `css` now.
    pub async fn find_all(&self, css: &str) -> Vec<Element<'_>> {
        let r = self.cmd("POST", "/elements", Some(json!({ "using": "css selector", "value": css }))).await;
        let v = self.ok(&format!("find all {css}"), r).await;
        let mut out = Vec::new();
        for item in v.as_array().cloned().unwrap_or_default() {
            let el = self.element(&item);
            out.push(self.ok(css, el).await);
        }
        out
    }

    /// The first element matching `css`, polling until `self.timeout`.
    pub async fn find(&self, css: &str) -> Element<'_> {
        let deadline = Instant::now() + self.timeout;
        loop {
            match self.try_find(css).await {
                Ok(Some(el)) => return el,
                Ok(None) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Ok(None) => self.fail(&format!("no element matches {css} after {:?}", self.timeout)).await,
                Err(e) => self.fail(&format!("find {css}: {e}")).await,
            }
        }
    }

    /// Clicks the element matching `css`.
    pub async fn click(&self, css: &str) {
        self.find(css).await.click().await
    }

    /// Clears the input matching `css` and types `text`.
    pub async fn fill(&self, css: &str, text: &str) {
        self.find(css).await.send_keys(text).await
    }

    /// The rendered text of the element matching `css`.
    pub async fn text(&self, css: &str) -> String {
        self.find(css).await.text().await
    }

    /// An attribute of the element matching `css`.
    pub async fn attr(&self, css: &str, name: &str) -> Option<String> {
        self.find(css).await.attr(name).await
    }

    /// Polls `probe` every 50 ms until it returns `Some`; fails after `timeout`.
    /// Probe errors (a stale element, a page mid-navigation) count as "not yet".
    pub async fn wait_until<T, F, Fut>(&self, what: &str, timeout: Duration, mut probe: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = WdResult<Option<T>>>,
    {
        let deadline = Instant::now() + timeout;
        let mut last_error = None;
        loop {
            match probe().await {
                Ok(Some(v)) => return v,
                Ok(None) => {}
                Err(e) => last_error = Some(e),
            }
            if Instant::now() > deadline {
                let note = last_error.map(|e| format!(" (last error: {e})")).unwrap_or_default();
                self.fail(&format!("timed out after {timeout:?} waiting for {what}{note}")).await;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Ends the session (closes Chromium) and stops chromedriver.
    pub async fn quit(mut self) {
        if !self.session.is_empty() {
            let _ = self.cmd("DELETE", "", None).await;
            self.session.clear();
        }
        // Drop stops chromedriver.
    }

    /// `DELETE /session/{id}` over a plain socket, for Drop (no runtime there).
    fn delete_session_blocking(&self) {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else { return };
        let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
        let request = format!(
            "DELETE /session/{} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            self.session, self.port
        );
        if s.write_all(request.as_bytes()).is_err() {
            return;
        }
        // Read the whole answer (chromedriver may keep the socket open).
        let mut answer = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(end) = answer.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&answer[..end]).to_ascii_lowercase();
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                if answer.len() >= end + 4 + length {
                    return;
                }
            }
            match s.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => answer.extend_from_slice(&chunk[..n]),
            }
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            self.delete_session_blocking();
        }
        let group = self.driver.id() as libc::pid_t;
        // SAFETY: signals to the process group of a child this process spawned
        // (chromedriver leads it; the Chromium it started is in it).
        unsafe {
            libc::kill(-group, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.driver.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: as above; ends whatever ignored SIGTERM.
        unsafe {
            libc::kill(-group, libc::SIGKILL);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// A web element of the session.
pub struct Element<'a> {
    browser: &'a Browser,
    pub id: String,
}

impl Element<'_> {
    async fn cmd(&self, method: &str, path: &str, body: Option<Value>) -> WdResult<Value> {
        self.browser.cmd(method, &format!("/element/{}{path}", self.id), body).await
    }

    pub async fn try_click(&self) -> WdResult<()> {
        self.cmd("POST", "/click", None).await.map(drop)
    }

    pub async fn click(&self) {
        let r = self.try_click().await;
        self.browser.ok("click", r).await
    }

    /// Clears the field, then types `text`.
    pub async fn try_send_keys(&self, text: &str) -> WdResult<()> {
        self.cmd("POST", "/clear", None).await?;
        self.cmd("POST", "/value", Some(json!({ "text": text }))).await.map(drop)
    }

    pub async fn send_keys(&self, text: &str) {
        let r = self.try_send_keys(text).await;
        self.browser.ok(&format!("send keys {text:?}"), r).await
    }

    /// Selects the `<option value=value>` of this `<select>` by clicking it.
    pub async fn try_select_value(&self, value: &str) -> WdResult<()> {
        let css = format!("option[value=\"{value}\"]");
        let v = self.cmd("POST", "/element", Some(json!({ "using": "css selector", "value": css }))).await?;
        let option = self.browser.element(&v)?;
        option.try_click().await
    }

    pub async fn select_value(&self, value: &str) {
        let r = self.try_select_value(value).await;
        self.browser.ok(&format!("select option {value:?}"), r).await
    }

    pub async fn try_text(&self) -> WdResult<String> {
        Ok(self.cmd("GET", "/text", None).await?.as_str().unwrap_or_default().to_string())
    }

    pub async fn text(&self) -> String {
        let r = self.try_text().await;
        self.browser.ok("text", r).await
    }

    /// An HTML attribute; `None` when absent.
    pub async fn try_attr(&self, name: &str) -> WdResult<Option<String>> {
        Ok(self.cmd("GET", &format!("/attribute/{name}"), None).await?.as_str().map(str::to_string))
    }

    pub async fn attr(&self, name: &str) -> Option<String> {
        let r = self.try_attr(name).await;
        self.browser.ok(&format!("attribute {name}"), r).await
    }

    /// A DOM property (`value`, `checked`, ...) as JSON.
    pub async fn try_prop(&self, name: &str) -> WdResult<Value> {
        self.cmd("GET", &format!("/property/{name}"), None).await
    }

    pub async fn prop(&self, name: &str) -> Value {
        let r = self.try_prop(name).await;
        self.browser.ok(&format!("property {name}"), r).await
    }
}
