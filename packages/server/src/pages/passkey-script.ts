/**
 * The passkey pages' script, served as a static asset (`/login/passkey.js`) so the strict CSP
 * (script-src 'self', no inline script, no connect-src) holds: a form with
 * `data-passkey-create` or `data-passkey-get` (the WebAuthn options as JSON, rendered by the
 * server with a stored challenge) asks the browser for a passkey on submit, puts the answer in
 * its `credential` field and submits. No fetch: everything goes through the form.
 */
export const PASSKEY_SCRIPT = `(function () {
  'use strict'
  function decode(s) {
    s = s.replace(/-/g, '+').replace(/_/g, '/')
    while (s.length % 4) s += '='
    var bin = atob(s), out = new Uint8Array(bin.length)
    for (var i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i)
    return out.buffer
  }
  function encode(buf) {
    var bytes = new Uint8Array(buf), bin = ''
    for (var i = 0; i < bytes.length; i++) bin += String.fromCharCode(bytes[i])
    return btoa(bin).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '')
  }
  function ids(list) {
    return (list || []).map(function (c) { return Object.assign({}, c, { id: decode(c.id) }) })
  }
  function answer(cred) {
    var r = cred.response, response = { clientDataJSON: encode(r.clientDataJSON) }
    if (r.attestationObject) {
      response.attestationObject = encode(r.attestationObject)
      response.transports = r.getTransports ? r.getTransports() : []
    }
    if (r.authenticatorData) {
      response.authenticatorData = encode(r.authenticatorData)
      response.signature = encode(r.signature)
      if (r.userHandle) response.userHandle = encode(r.userHandle)
    }
    return { id: cred.id, rawId: encode(cred.rawId), type: cred.type, response: response, clientExtensionResults: cred.getClientExtensionResults() }
  }
  document.addEventListener('submit', function (ev) {
    var form = ev.target
    var create = form.getAttribute('data-passkey-create'), get = form.getAttribute('data-passkey-get')
    if (!create && !get) return
    ev.preventDefault()
    var status = form.querySelector('[data-passkey-status]')
    if (!window.PublicKeyCredential) {
      if (status) status.textContent = 'This browser cannot use passkeys.'
      return
    }
    var o = JSON.parse(create || get), ask
    if (create) {
      o.challenge = decode(o.challenge)
      o.user = Object.assign({}, o.user, { id: decode(o.user.id) })
      o.excludeCredentials = ids(o.excludeCredentials)
      ask = navigator.credentials.create({ publicKey: o })
    } else {
      o.challenge = decode(o.challenge)
      o.allowCredentials = ids(o.allowCredentials)
      ask = navigator.credentials.get({ publicKey: o })
    }
    ask.then(function (cred) {
      form.querySelector('input[name="credential"]').value = JSON.stringify(answer(cred))
      form.submit()
    }, function (err) {
      if (status) status.textContent = err && err.name === 'NotAllowedError' ? 'The passkey was not used (cancelled, or it timed out).' : 'This device refused the passkey.'
    })
  })
})()
`
