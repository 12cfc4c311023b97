//! Headless Chromium for the browser tests, driven over WebDriver with
//! `fantoccini`: this starts Debian's `chromedriver` on a free loopback port,
//! opens one session with a phone-sized window, and wraps fantoccini's
//! calls so that every step that fails panics with the current URL, the
//! text of the elements the test named with `Browser::show_on_failure`, and
//! the page source.

use std::future::Future;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::error::CmdError;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};

pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// One Chromium at a time, across every browser test of the binary: the
/// machines that run them are small.
pub static BROWSER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A WebDriver step's outcome.
pub type WdResult<T> = Result<T, CmdError>;

/// Whether the browser tests can run here. Missing binaries fail the test
/// when `CI` is set; otherwise this prints why the test is skipped and
/// returns `false`.
pub fn browser_available(test: &str) -> bool {
    let missing: Vec<&str> =
        [CHROMIUM, CHROMEDRIVER].into_iter().filter(|p| !std::path::Path::new(p).exists()).collect();
    if missing.is_empty() {
        return true;
    }
    let missing = missing.join(" and ");
    super::cannot_run(test, &format!("{missing} missing (apt-get install chromium chromium-driver)"));
    false
}

/// The chromedriver process. Dropping it ends chromedriver and the Chromium
/// it started, whatever state the session is in.
struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let group = self.0.id() as libc::pid_t;
        // SAFETY: signals to the process group of a child this process spawned
        // (chromedriver leads it; the Chromium it started is in it).
        unsafe {
            libc::kill(-group, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: as above; ends whatever ignored SIGTERM.
        unsafe {
            libc::kill(-group, libc::SIGKILL);
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One chromedriver process and the browser session it runs.
pub struct Browser {
    client: Client,
    /// How long `find` and the steps built on it wait for an element.
    pub timeout: Duration,
    /// Selectors whose text (and `data-state`) every failure message shows.
    context: Vec<String>,
    // Declared last, so it is dropped after the client.
    _driver: Driver,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("bind a free port").local_addr().unwrap().port()
}

/// The size of the page the browser shows, in CSS pixels.
#[derive(Debug, Clone, Copy)]
pub struct Viewport {
    pub width: u32,
    pub height: u32,
    /// A phone: touch and a true narrow viewport.
    pub mobile: bool,
    /// A phone's device pixels per CSS pixel (a screenshot's scale).
    pub pixel_ratio: f64,
}

impl Viewport {
    pub const PHONE: Viewport = Viewport { width: 390, height: 844, mobile: true, pixel_ratio: 3.0 };
    pub const DESKTOP: Viewport = Viewport { width: 1280, height: 800, mobile: false, pixel_ratio: 1.0 };
}

/// What the session asks chromedriver for: headless Chromium at `viewport`.
fn capabilities(viewport: Viewport) -> serde_json::Map<String, Value> {
    let Viewport { width, height, mobile, pixel_ratio } = viewport;
    let mut options = json!({
        "binary": CHROMIUM,
        "args": [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            format!("--window-size={width},{height}"),
        ],
    });
    if mobile {
        // Desktop Chrome keeps windows at least 500 px wide; this gives
        // the page a true phone viewport.
        options["mobileEmulation"] = json!({
            "deviceMetrics": { "width": width, "height": height, "pixelRatio": pixel_ratio, "touch": true },
        });
    }
    let capabilities = json!({ "browserName": "chrome", "goog:chromeOptions": options });
    let Value::Object(capabilities) = capabilities else { unreachable!("a JSON object") };
    capabilities
}

/// Opens a session on the chromedriver at `port`, retrying while it starts up.
async fn open_session(port: u16, driver: &mut Driver, viewport: Viewport) -> Result<Client, String> {
    // chromedriver listens on plain HTTP on loopback: no TLS is involved.
    let mut builder = ClientBuilder::new(HttpConnector::new());
    builder.capabilities(capabilities(viewport));
    let url = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(Some(status)) = driver.0.try_wait() {
            return Err(format!("chromedriver exited with {status}"));
        }
        match builder.connect(&url).await {
            Ok(client) => return Ok(client),
            Err(e) if Instant::now() > deadline => {
                return Err(format!("no WebDriver session within 20 s: {e}"));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

impl Browser {
    /// Starts chromedriver and a headless Chromium session (390x844).
    pub async fn start() -> Browser {
        Browser::start_with(Viewport::PHONE).await
    }

    /// Starts chromedriver and a headless Chromium session at `viewport`.
    pub async fn start_with(viewport: Viewport) -> Browser {
        let mut last = String::new();
        for _ in 0..3 {
            let port = free_port();
            let child = Command::new(CHROMEDRIVER)
                .arg(format!("--port={port}"))
                .arg("--allowed-ips=127.0.0.1")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                // Its own process group, so Drop can end Chromium with it.
                .process_group(0)
                .spawn()
                .unwrap_or_else(|e| panic!("spawn {CHROMEDRIVER}: {e}"));
            let mut driver = Driver(child);
            match open_session(port, &mut driver, viewport).await {
                Ok(client) => {
                    return Browser {
                        client,
                        timeout: Duration::from_secs(10),
                        context: Vec::new(),
                        _driver: driver,
                    };
                }
                // Dropping `driver` ends this chromedriver; the next try takes a fresh port.
                Err(e) => last = e,
            }
        }
        panic!("could not start a WebDriver session: {last}");
    }

    /// Failure messages also show the text of these elements (and their `data-state`).
    pub fn show_on_failure(&mut self, selectors: &[&str]) {
        self.context = selectors.iter().map(|s| s.to_string()).collect();
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
        let source = self.client.source().await.unwrap_or_else(|e| format!("<{e}>"));
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
        let r = self.client.goto(url).await;
        self.ok(&format!("goto {url}"), r).await
    }

    pub async fn try_current_url(&self) -> WdResult<String> {
        Ok(self.client.current_url().await?.to_string())
    }

    pub async fn current_url(&self) -> String {
        let r = self.try_current_url().await;
        self.ok("current url", r).await
    }

    pub async fn source(&self) -> String {
        let r = self.client.source().await;
        self.ok("page source", r).await
    }

    /// Saves a PNG of the viewport at `path` (its folder is created).
    pub async fn screenshot(&self, path: &std::path::Path) {
        let r = self.client.screenshot().await;
        let png = self.ok(&format!("screenshot {}", path.display()), r).await;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
        }
        std::fs::write(path, png).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }

    /// The value of the session's cookie `name` (HttpOnly ones too), if set.
    pub async fn cookie(&self, name: &str) -> Option<String> {
        let r = self.client.get_all_cookies().await;
        let cookies = self.ok("cookies", r).await;
        cookies.iter().find(|c| c.name() == name).map(|c| c.value().to_string())
    }

    /// Runs `script` (a function body; `arguments` holds `args`) and returns its value.
    pub async fn execute(&self, script: &str, args: Vec<Value>) -> Value {
        let r = self.client.execute(script, args).await;
        self.ok(&format!("execute {script}"), r).await
    }

    fn element(&self, inner: fantoccini::elements::Element) -> Element<'_> {
        Element { browser: self, inner }
    }

    /// The first element matching `css` now, if any (no waiting).
    pub async fn try_find(&self, css: &str) -> WdResult<Option<Element<'_>>> {
        match self.client.find(Locator::Css(css)).await {
            Ok(inner) => Ok(Some(self.element(inner))),
            Err(e) if e.is_no_such_element() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Every element matching `css` now.
    pub async fn find_all(&self, css: &str) -> Vec<Element<'_>> {
        let r = self.client.find_all(Locator::Css(css)).await;
        let found = self.ok(&format!("find all {css}"), r).await;
        found.into_iter().map(|inner| self.element(inner)).collect()
    }

    /// The first element matching `css`, polling until `self.timeout`.
    /// A search that a navigation (a form just submitted) cut short is
    /// tried again on the new page, until the timeout.
    pub async fn find(&self, css: &str) -> Element<'_> {
        let deadline = Instant::now() + self.timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let wait = self.client.wait().at_most(left).every(Duration::from_millis(50));
            match wait.for_element(Locator::Css(css)).await {
                Ok(inner) => return self.element(inner),
                Err(CmdError::WaitTimeout) => {
                    self.fail(&format!("no element matches {css} after {:?}", self.timeout)).await
                }
                Err(e) if e.to_string().contains("aborted by navigation") && !left.is_zero() => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
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

    /// Ends the session (closes Chromium), then stops chromedriver.
    pub async fn quit(self) {
        let Browser { client, _driver, .. } = self;
        let _ = client.close().await;
    }
}

/// A web element of the session; its failing steps show the browser's diagnostics.
pub struct Element<'a> {
    browser: &'a Browser,
    inner: fantoccini::elements::Element,
}

impl Element<'_> {
    pub async fn click(&self) {
        let r = self.inner.click().await;
        self.browser.ok("click", r).await
    }

    /// Clears the field, then types `text`.
    pub async fn try_send_keys(&self, text: &str) -> WdResult<()> {
        self.inner.clear().await?;
        self.inner.send_keys(text).await
    }

    /// Chooses the file at `path` in this `<input type=file>`, as a person
    /// picking it would (WebDriver types the path; nothing is cleared).
    pub async fn choose_file(&self, path: &std::path::Path) {
        let r = self.inner.send_keys(&path.display().to_string()).await;
        self.browser.ok(&format!("choose file {}", path.display()), r).await
    }

    pub async fn send_keys(&self, text: &str) {
        let r = self.try_send_keys(text).await;
        self.browser.ok(&format!("send keys {text:?}"), r).await
    }

    /// Selects the `<option value=value>` of this `<select>` by clicking it.
    pub async fn select_value(&self, value: &str) {
        let r = self.inner.select_by_value(value).await;
        self.browser.ok(&format!("select option {value:?}"), r).await
    }

    pub async fn try_text(&self) -> WdResult<String> {
        self.inner.text().await
    }

    pub async fn text(&self) -> String {
        let r = self.try_text().await;
        self.browser.ok("text", r).await
    }

    /// An HTML attribute; `None` when absent.
    pub async fn try_attr(&self, name: &str) -> WdResult<Option<String>> {
        self.inner.attr(name).await
    }

    pub async fn attr(&self, name: &str) -> Option<String> {
        let r = self.try_attr(name).await;
        self.browser.ok(&format!("attribute {name}"), r).await
    }

    /// A DOM property (`value`, `checked`, ...); booleans read `"true"` or `"false"`.
    pub async fn try_prop(&self, name: &str) -> WdResult<Option<String>> {
        self.inner.prop(name).await
    }

    pub async fn prop(&self, name: &str) -> Option<String> {
        let r = self.try_prop(name).await;
        self.browser.ok(&format!("property {name}"), r).await
    }
}
