// Countersign's passkey prompts: adding a passkey on the account page, and answering the
// step-up challenge of an approval the policy asks a passkey for.
//
// A form marked `data-passkey-register` or `data-step-up` is a plain form: pressing its
// button asks the server (POST /fn/passkey_options, with the form's CSRF token) for the
// options of the browser's prompt, runs the prompt, puts the answer in the form's hidden
// `credential` or `passkey` field, and posts the form. The server checks everything; this
// only carries bytes between the server and the authenticator.
"use strict";

(() => {
  const fromB64u = (text) => {
    const b64 = text.replace(/-/g, "+").replace(/_/g, "/");
    const padded = b64 + "=".repeat((4 - (b64.length % 4)) % 4);
    return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0)).buffer;
  };
  const toB64u = (buffer) => {
    let text = "";
    for (const byte of new Uint8Array(buffer)) text += String.fromCharCode(byte);
    return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  };

  const say = (form, message) => {
    const slot = form.querySelector("[role=alert]");
    if (slot) {
      slot.textContent = message;
      slot.hidden = false;
    }
  };

  // The options of the browser's prompt, as the server gives them.
  const options = async (form, id) => {
    const body = new URLSearchParams({ csrf_token: form.elements.csrf_token.value });
    if (id) body.set("id", id);
    const response = await fetch("/fn/passkey_options", {
      method: "POST",
      headers: { Accept: "application/json" },
      body,
      credentials: "same-origin",
    });
    if (!response.ok) throw new Error("the server could not start the passkey prompt");
    const answer = JSON.parse(await response.json());
    if (answer.refused) throw new Error(answer.message);
    return answer.publicKey;
  };

  const register = async (form) => {
    const publicKey = await options(form);
    publicKey.challenge = fromB64u(publicKey.challenge);
    publicKey.user.id = fromB64u(publicKey.user.id);
    for (const c of publicKey.excludeCredentials || []) c.id = fromB64u(c.id);
    const credential = await navigator.credentials.create({ publicKey });
    form.elements.credential.value = JSON.stringify({
      id: credential.id,
      rawId: toB64u(credential.rawId),
      type: credential.type,
      response: {
        attestationObject: toB64u(credential.response.attestationObject),
        clientDataJSON: toB64u(credential.response.clientDataJSON),
      },
      extensions: credential.getClientExtensionResults(),
    });
  };

  const stepUp = async (form) => {
    const publicKey = await options(form, form.elements.id.value);
    publicKey.challenge = fromB64u(publicKey.challenge);
    for (const c of publicKey.allowCredentials || []) c.id = fromB64u(c.id);
    const credential = await navigator.credentials.get({ publicKey });
    const r = credential.response;
    form.elements.passkey.value = JSON.stringify({
      id: credential.id,
      rawId: toB64u(credential.rawId),
      type: credential.type,
      response: {
        authenticatorData: toB64u(r.authenticatorData),
        clientDataJSON: toB64u(r.clientDataJSON),
        signature: toB64u(r.signature),
        userHandle: r.userHandle ? toB64u(r.userHandle) : null,
      },
      extensions: credential.getClientExtensionResults(),
    });
  };

  document.addEventListener(
    "submit",
    (event) => {
      const form = event.target;
      const ceremony =
        "passkeyRegister" in form.dataset ? register : "stepUp" in form.dataset ? stepUp : null;
      if (!ceremony || form.dataset.answered === "yes") return;
      event.preventDefault();
      if (!window.PublicKeyCredential) {
        say(form, "This browser cannot use passkeys.");
        return;
      }
      const button = form.querySelector("button[type=submit]");
      if (button) button.disabled = true;
      ceremony(form)
        .then(() => {
          form.dataset.answered = "yes";
          form.submit();
        })
        .catch((e) => {
          say(form, `The passkey prompt did not finish: ${e.message}`);
          if (button) button.disabled = false;
        });
    },
    true,
  );
})();
