(function () {
  var data = JSON.parse(document.getElementById('checkout-data').textContent);
  var say = data.messages;
  var form = document.getElementById('checkout');
  var fields = document.getElementById('fields');
  var status = document.getElementById('status');
  var error = document.getElementById('error');
  var button = document.getElementById('pay');
  var outcome = document.getElementById('outcome');
  var instructions = document.getElementById('instructions');
  var amountInput = document.getElementById('amount');
  var network = document.getElementById('network');
  var target = data.id;
  // The field the shown error is about: it sits next to it until corrected.
  var errorFor = null;
  // The countdown of the shown instructions, while one runs.
  var ticking = null;

  function setStatus(state, text) {
    status.setAttribute('data-state', state);
    status.textContent = text;
  }
  // Brings `el` into view when any of it is off screen: the payer on a
  // phone has just pressed Pay at the bottom of a long form.
  function reveal(el) {
    var box = el.getBoundingClientRect();
    var height = window.innerHeight || document.documentElement.clientHeight;
    if (box.top >= 0 && box.bottom <= height) { return; }
    el.scrollIntoView({ block: box.height > height ? 'start' : 'nearest' });
  }
  // 1250.5 -> 1,250.5: thousands separators in the whole part.
  function group(text) {
    var parts = String(text).split('.');
    parts[0] = parts[0].replace(/\B(?=(\d{3})+(?!\d))/g, ',');
    return parts.join('.');
  }
  function money(text, currency) { return currency + ' ' + group(text); }
  // What the payer typed, without thousands separators in groups of three
  // (`1,500.00` reads 1500.00, as the page writes amounts).
  function plain(text) {
    var t = text.trim();
    return /^\d{1,3}(,\d{3})+(\.\d*)?$/.test(t) ? t.replace(/,/g, '') : t;
  }
  // What the payer typed, at the currency's scale ('' when it is not a positive amount).
  function typedAmount(text) {
    var m = /^(\d+)(?:\.(\d*))?$/.exec(plain(text));
    if (!m || (m[2] || '').length > data.scale || !/[1-9]/.test(m[1] + (m[2] || ''))) { return ''; }
    var fraction = ((m[2] || '') + '000000000000000000').slice(0, data.scale);
    var whole = m[1].replace(/^0+(?=\d)/, '');
    return group(whole) + (data.scale ? '.' + fraction : '');
  }
  function payLabel() {
    var shown = typedAmount(amountInput.value);
    button.textContent = shown ? 'Pay ' + data.currency + ' ' + shown : 'Pay';
  }
  amountInput.addEventListener('input', payLabel);

  function chosenMethod() {
    var checked = form.querySelector('input[name=method]:checked');
    return checked ? checked.value : '';
  }
  function showDetails() {
    var method = chosenMethod();
    form.querySelectorAll('.details').forEach(function (el) {
      el.hidden = el.getAttribute('data-method') !== method;
    });
  }
  form.querySelectorAll('input[name=method]').forEach(function (el) {
    el.addEventListener('change', showDetails);
  });
  showDetails();

  // The chosen network's country: its example number and the phone's help.
  function networkCountry() {
    var option = network && network.options[network.selectedIndex];
    if (!option) { return { country: '', local: '', international: '' }; }
    return {
      country: option.getAttribute('data-country'),
      local: option.getAttribute('data-local'),
      international: option.getAttribute('data-international')
    };
  }
  function phoneHelp() {
    var c = networkCountry();
    document.getElementById('phone').setAttribute('placeholder', c.local);
    document.getElementById('phone-country').textContent = c.country;
    document.getElementById('phone-local').textContent = c.local;
    document.getElementById('phone-international').textContent = c.international;
  }
  if (network) { network.addEventListener('change', phoneHelp); }

  function fieldElement(field) {
    var ids = { amount: 'amount', phone: 'phone', network: 'network', email: 'email', chain: 'coin', method: 'methods' };
    var id = field && (ids[field] || (field.indexOf('customFields.') === 0 ? 'custom-' + field.slice(13) : ''));
    return id ? document.getElementById(id) : null;
  }
  function labelOf(id) {
    var labels = form.getElementsByTagName('label');
    for (var i = 0; i < labels.length; i++) {
      if (labels[i].htmlFor === id) { return labels[i].textContent.replace(/\s*\*$/, ''); }
    }
    return 'this field';
  }
  function clearError() {
    error.textContent = '';
    if (errorFor) { errorFor.classList.remove('invalid'); errorFor.removeAttribute('aria-invalid'); }
    errorFor = null;
    button.insertAdjacentElement('beforebegin', error);
  }
  // Shows `message` next to the field it is about (above the button otherwise).
  function fail(message, field) {
    clearError();
    error.textContent = message;
    var el = fieldElement(field);
    if (!el) { reveal(error); return; }
    el.classList.add('invalid');
    el.setAttribute('aria-invalid', 'true');
    el.insertAdjacentElement('afterend', error);
    errorFor = el;
    if (el.focus) { el.focus(); }
    reveal(error);
  }
  // Correcting the field clears its error as the payer types.
  function corrected(event) {
    if (errorFor && (event.target === errorFor || errorFor.contains(event.target))) { clearError(); }
  }
  form.addEventListener('input', corrected);
  form.addEventListener('change', corrected);

  // The API names fields for developers; the payer gets a sentence.
  function amountSentence(reason) {
    var range = /^(.*) accepts (\S+) to (\S+) (\S+)$/.exec(reason);
    if (range) {
      return say.amountRange.replace('{method}', range[1])
        .replace('{min}', money(range[2], range[4])).replace('{max}', money(range[3], range[4]));
    }
    if (reason.indexOf('fraction digits') >= 0) { return say.amountDecimals; }
    if (reason.indexOf('not a decimal') >= 0) { return say.amountNumber; }
    if (/zero|negative/.test(reason)) { return say.amountPositive; }
    if (reason.indexOf('maximum') >= 0) { return say.amountTooLarge; }
    return say.amountMissing;
  }
  function phoneSentence() {
    var c = networkCountry();
    return say.phone.replace('{country}', c.country).replace('{example}', c.local);
  }
  function sentence(status, body) {
    var details = body.details || {};
    var field = String(details.field || '');
    var reason = String(details.reason || '');
    if (status === 429) { return say.rateLimited; }
    if (status >= 500) { return say.unavailable; }
    if (body.error !== 'validation_error') {
      var text = String(body.message || '');
      return text ? text.charAt(0).toUpperCase() + text.slice(1) + (/[.!?]$/.test(text) ? '' : '.') : say.generic;
    }
    if (field === 'amount') { return amountSentence(reason); }
    if (field === 'phone') { return phoneSentence(); }
    if (field === 'method') { return reason.indexOf('not offered') >= 0 ? say.methodUnavailable : say.method; }
    if (field.indexOf('customFields.') === 0) {
      var which = reason.indexOf('required') >= 0 ? say.customRequired
        : reason.indexOf('500') >= 0 ? say.customLong : say.customText;
      return which.replace('{label}', labelOf('custom-' + field.slice(13)));
    }
    return say[field] || say.generic;
  }

  // `ethereum` -> `Ethereum`: the chain as the payer's wallet names it.
  function chainName(chain) { return chain ? chain.charAt(0).toUpperCase() + chain.slice(1) : ''; }
  function minutes(ms) {
    var s = Math.max(0, Math.ceil(ms / 1000));
    var m = Math.floor(s / 60);
    s = s % 60;
    return (m < 10 ? '0' : '') + m + ':' + (s < 10 ? '0' : '') + s;
  }
  function stopCountdown() {
    if (ticking) { clearInterval(ticking); ticking = null; }
  }
  // Counts down to the session's expiry, on the server's clock (the
  // session's lifetime from its creation) rather than the phone's.
  function countdown(session) {
    var slot = instructions.querySelector('[data-slot=countdown]');
    if (!slot) { return; }
    var deadline = Date.now() + (Date.parse(session.expiresAt) - Date.parse(session.createdAt));
    function tick() {
      var left = deadline - Date.now();
      slot.textContent = minutes(left);
      if (left <= 0) { stopCountdown(); }
    }
    tick();
    ticking = setInterval(tick, 1000);
  }
  // The values the instructions' slots show, as text.
  function slots(session) {
    var i = session.instructions;
    var values = {};
    Object.keys(i).forEach(function (key) { values[key] = i[key]; });
    values.amount = money(i.amount, i.asset || i.currency);
    if (i.type === 'crypto') {
      values.chainName = chainName(i.chain);
      values.rate = money(session.rate, session.destinationCurrency);
      values.paying = money(session.destinationAmount, session.destinationCurrency);
      values.qr = '/pay/' + encodeURIComponent(session.paymentLinkId) + '/sessions/' +
        encodeURIComponent(session.id) + '/qr.svg';
    }
    return values;
  }
  function showInstructions(session) {
    var i = session.instructions;
    var template = i && document.getElementById('instructions-' + i.type);
    stopCountdown();
    if (!template) { instructions.hidden = true; return; }
    var values = slots(session);
    var copy = template.content.cloneNode(true);
    copy.querySelectorAll('[data-slot]').forEach(function (el) {
      el.textContent = values[el.getAttribute('data-slot')] || '';
    });
    copy.querySelectorAll('[data-slot-src]').forEach(function (el) {
      el.setAttribute('src', values[el.getAttribute('data-slot-src')] || '');
    });
    instructions.textContent = '';
    instructions.appendChild(copy);
    instructions.hidden = false;
    countdown(session);
  }
  // The copy buttons: the clipboard where the browser allows it, else the
  // text is selected for the payer to copy.
  instructions.addEventListener('click', function (event) {
    var copyButton = event.target.closest('[data-copy]');
    if (!copyButton) { return; }
    var source = document.getElementById(copyButton.getAttribute('data-copy'));
    var text = source.textContent;
    function copied() { copyButton.textContent = 'Copied'; copyButton.setAttribute('data-copied', 'true'); }
    function select() {
      var range = document.createRange();
      range.selectNodeContents(source);
      var selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      copyButton.textContent = 'Selected: copy it now';
    }
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(copied, select);
    } else {
      select();
    }
  });

  function redirect(link, session) {
    if (!data.redirectUrl) { return; }
    var url = data.redirectUrl + (data.redirectUrl.indexOf('?') >= 0 ? '&' : '?') +
      'paymentLinkId=' + encodeURIComponent(link.id) + '&sessionId=' + encodeURIComponent(session.id) +
      '&status=complete';
    setTimeout(function () { window.location.assign(url); }, 1500);
  }

  function finish(body) {
    var session = body.session;
    var link = body.paymentLink;
    button.disabled = false;
    // The attempt is over: what it asked the payer to send no longer applies.
    stopCountdown();
    instructions.hidden = true;
    var paid = money(session.destinationAmount, session.destinationCurrency);
    if (session.status === 'complete' || session.status === 'partial') {
      if (link.status === 'paid') {
        setStatus('complete', 'Payment received. Thank you! ' + paid + ' paid.');
        fields.hidden = true;
        button.hidden = true;
        redirect(link, session);
      } else {
        setStatus('complete', 'Payment received: ' + paid + '. Remaining: ' + money(link.remaining, link.currency) + '.');
        amountInput.value = link.remaining || '';
        payLabel();
      }
    } else {
      setStatus('failed', 'The payment failed. ' + body.payerMessage + ' You can try again or choose another method.');
    }
    reveal(status);
  }

  function poll(sessionId) {
    fetch('/pay/' + target + '/sessions/' + sessionId).then(function (r) { return r.json(); }).then(function (body) {
      var session = body.session;
      if (!session) { throw new Error(body.message || 'lost the payment'); }
      if (session.status === 'pending') {
        setStatus('processing', body.payerMessage);
        setTimeout(function () { poll(sessionId); }, 500);
      } else {
        finish(body);
      }
    }).catch(function () {
      setStatus('processing', 'Connection lost; retrying…');
      setTimeout(function () { poll(sessionId); }, 1500);
    });
  }

  // The request body, or null after showing what the payer must fix first.
  function attempt() {
    var amount = plain(amountInput.value);
    var method = chosenMethod();
    if (!amount) { return fail(say.amountMissing, 'amount'); }
    if (!/^[0-9]+(\.[0-9]+)?$/.test(amount)) { return fail(say.amountNumber, 'amount'); }
    if (!method) { return fail(say.method, 'method'); }
    var body = { amount: amount, method: method, customFields: {} };
    var email = document.getElementById('email').value.trim();
    if (email) { body.email = email; }
    var missing = null;
    form.querySelectorAll('input[name^="custom:"]').forEach(function (el) {
      var name = el.name.slice(7);
      if (el.value.trim()) { body.customFields[name] = el.value.trim(); }
      else if (el.required && !missing) { missing = name; }
    });
    if (missing) {
      return fail(say.customRequired.replace('{label}', labelOf('custom-' + missing)), 'customFields.' + missing);
    }
    if (method === 'mobile_money') {
      body.network = network.value;
      body.phone = document.getElementById('phone').value.trim();
      if (!body.phone) { return fail(phoneSentence(), 'phone'); }
    }
    if (method === 'crypto') {
      var coin = document.getElementById('coin').value.split('|');
      body.asset = coin[0];
      body.chain = coin[1];
    }
    return body;
  }

  form.addEventListener('submit', function (event) {
    event.preventDefault();
    clearError();
    var body = attempt();
    if (!body) { return; }
    button.disabled = true;
    setStatus('processing', 'Starting the payment…');
    fetch('/pay/' + target + '/sessions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body)
    }).then(function (r) {
      return r.json().then(function (json) { return { ok: r.ok, status: r.status, json: json }; });
    }).then(function (res) {
      if (!res.ok) {
        button.disabled = false;
        setStatus('idle', '');
        return fail(sentence(res.status, res.json || {}), res.json.details && res.json.details.field);
      }
      target = res.json.paymentLink.id;
      form.setAttribute('data-link-id', target);
      setStatus('processing', res.json.payerMessage);
      showInstructions(res.json.session);
      reveal(outcome);
      poll(res.json.session.id);
    }).catch(function () {
      button.disabled = false;
      setStatus('idle', '');
      fail(say.offline);
    });
  });
})();
