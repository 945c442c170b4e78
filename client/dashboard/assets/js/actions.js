// actions.js: the buttons that change something, and what they report.
//
// In read-only mode no button is made at all (the server refuses actions
// anyway). A destructive action asks first. The outcome, or the server's
// refusal with its SQLSTATE (a role without the tier gets 42501), is shown
// in the notice line; the page then refreshes.
import { act, readOnly } from './api.js';
import { el, errorText, visible } from './dom.js';

let afterAction = () => {};
// Called after every action, to refresh the page at once.
export function setAfterAction(callback) {
  afterAction = callback;
}

export function notice(text, isError) {
  const node = document.getElementById('notice');
  // one line of server text: names in it spelled out, the line isolated (app.css)
  node.textContent = visible(text);
  node.className = isError ? 'notice error' : 'notice';
  node.hidden = false;
}

// A button running action `name` with body(); `confirmText` asks first
// (its invisible and bidirectional characters spelled out: the user must
// see what he confirms), `done(result)` says what happened. Null in
// read-only mode.
export function actionButton(label, name, body, { confirmText, done, danger, testid } = {}) {
  if (readOnly) return null;
  return el('button', {
    type: 'button',
    className: danger ? 'action danger' : 'action',
    dataset: { action: name, testid: testid || name },
    onclick: async (event) => {
      const button = event.currentTarget;
      if (confirmText && !window.confirm(visible(confirmText))) return;
      button.disabled = true;
      try {
        const result = await act(name, typeof body === 'function' ? body() : body);
        notice(done ? done(result) : label + ': done', false);
      } catch (error) {
        notice(label + ' refused: ' + errorText(error), true);
      } finally {
        button.disabled = false;
        afterAction();
      }
    },
  }, label);
}
