//! The dashboard over plain HTTP, as a browser without script would use
//! it: pages are fetched, forms posted with their CSRF token, cookies kept
//! from `Set-Cookie` (redirects are followed by hand, so none is lost).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

/// One HTML answer.
pub struct Page {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
    /// Where the answer came from, after redirects.
    pub path: String,
}

impl Page {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The CSRF token of the page's first form.
    pub fn csrf(&self) -> String {
        let marker = "name=\"csrf\" value=\"";
        let start =
            self.text.find(marker).unwrap_or_else(|| panic!("no CSRF token on {}: {}", self.path, self.text));
        let rest = &self.text[start + marker.len()..];
        rest[..rest.find('"').unwrap()].to_string()
    }

    /// The text of the element with this id (its inner HTML, tags and all).
    pub fn element(&self, id: &str) -> Option<String> {
        let start = self.text.find(&format!("id=\"{id}\""))?;
        let open_end = start + self.text[start..].find('>')? + 1;
        let rest = &self.text[open_end..];
        Some(rest[..rest.find("</").unwrap_or(rest.len())].to_string())
    }

    pub fn has(&self, id: &str) -> bool {
        self.text.contains(&format!("id=\"{id}\""))
    }
}

/// A browser's session with one stack's dashboard.
pub struct Dashboard {
    pub base: String,
    client: reqwest::Client,
    cookies: Mutex<BTreeMap<String, String>>,
    /// Every `Set-Cookie` seen, as sent.
    pub set_cookies: Mutex<Vec<String>>,
}

impl Dashboard {
    /// `base` is the stack's URL (`http://127.0.0.1:port`).
    pub fn new(base: &str) -> Dashboard {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .build()
            .unwrap();
        Dashboard { base: base.to_string(), client, cookies: Mutex::default(), set_cookies: Mutex::default() }
    }

    pub fn cookie(&self, name: &str) -> Option<String> {
        self.cookies.lock().unwrap().get(name).cloned()
    }

    /// Replaces (or with `None` forgets) a cookie, as a forger would.
    pub fn set_cookie(&self, name: &str, value: Option<&str>) {
        let mut cookies = self.cookies.lock().unwrap();
        match value {
            Some(value) => cookies.insert(name.to_string(), value.to_string()),
            None => cookies.remove(name),
        };
    }

    fn cookie_header(&self) -> String {
        self.cookies.lock().unwrap().iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ")
    }

    async fn send(&self, method: reqwest::Method, path: &str, form: Option<&[(&str, &str)]>) -> Page {
        self.send_body(method, path, form, None).await
    }

    async fn send_body(
        &self,
        method: reqwest::Method,
        path: &str,
        form: Option<&[(&str, &str)]>,
        raw: Option<(String, Vec<u8>)>,
    ) -> Page {
        let mut request = self.client.request(method.clone(), format!("{}{path}", self.base));
        if let Some((content_type, bytes)) = raw {
            request = request.header("content-type", content_type).body(bytes);
        }
        let cookies = self.cookie_header();
        if !cookies.is_empty() {
            request = request.header("cookie", cookies);
        }
        if let Some(form) = form {
            request = request.form(form);
        }
        let response = request.send().await.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        for value in headers.get_all("set-cookie") {
            let text = value.to_str().unwrap().to_string();
            let pair = text.split(';').next().unwrap();
            let (name, value) = pair.split_once('=').unwrap();
            let removed = text.contains("Max-Age=0");
            self.set_cookie(name, (!removed).then_some(value));
            self.set_cookies.lock().unwrap().push(text);
        }
        let text = response.text().await.unwrap();
        Page { status, headers, text, path: path.to_string() }
    }

    /// `GET path`, following redirects.
    pub async fn get(&self, path: &str) -> Page {
        let mut page = self.send(reqwest::Method::GET, path, None).await;
        for _ in 0..5 {
            if !(300..400).contains(&page.status) {
                return page;
            }
            let to = page.header("location").unwrap().to_string();
            page = self.send(reqwest::Method::GET, &to, None).await;
        }
        page
    }

    /// `POST path` with `fields` (the CSRF token is the caller's to add),
    /// following a redirect.
    pub async fn post(&self, path: &str, fields: &[(&str, &str)]) -> Page {
        let page = self.send(reqwest::Method::POST, path, Some(fields)).await;
        if (300..400).contains(&page.status) {
            let to = page.header("location").unwrap().to_string();
            return self.get(&to).await;
        }
        page
    }

    /// Posts the form at `form_path` after reading its CSRF token from `page_path`.
    pub async fn submit(&self, page_path: &str, form_path: &str, fields: &[(&str, &str)]) -> Page {
        let csrf = self.get(page_path).await.csrf();
        let mut all = vec![("csrf", csrf.as_str())];
        all.extend_from_slice(fields);
        self.post(form_path, &all).await
    }

    /// Posts `fields` and one file input (`file`: its name, type and
    /// bytes, or an empty input) as `multipart/form-data`, as a browser
    /// sends a form with a file, following a redirect.
    pub async fn post_multipart(
        &self,
        path: &str,
        fields: &[(&str, &str)],
        file: (&str, &str, &str, &[u8]),
    ) -> Page {
        let boundary = "----sikaTestBoundary7MA4YWxkTrZu0gW";
        let mut body = Vec::new();
        for (name, value) in fields {
            body.extend_from_slice(
                format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n")
                    .as_bytes(),
            );
        }
        let (input, file_name, content_type, bytes) = file;
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{input}\"; filename=\"{file_name}\"\r\n\
                 Content-Type: {content_type}\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let raw = (format!("multipart/form-data; boundary={boundary}"), body);
        let page = self.send_body(reqwest::Method::POST, path, None, Some(raw)).await;
        if (300..400).contains(&page.status) {
            let to = page.header("location").unwrap().to_string();
            return self.get(&to).await;
        }
        page
    }

    /// Logs in with a password (no second factor); returns the home page.
    pub async fn log_in(&self, email: &str, password: &str) -> Page {
        let page = self
            .submit("/dashboard/login", "/dashboard/login", &[("email", email), ("password", password)])
            .await;
        assert_eq!(page.path, "/dashboard", "logged in: {} {}", page.status, page.text);
        page
    }
}
