# The DecoratorController's hook of tests/e2e/plan_decorator.rs, served by
# server.py. Labels the object and counts its attachments into an
# annotation; attaches a Secret `<name>-attached` whose `text` is the
# object's `e2e.metahook.dev/secret-text` annotation (`v1` without one);
# gives a status only to a type that keeps one (a Widget: a ConfigMap has
# no status, and a status asked of it would be asked again every pass);
# finalize lets the object go.
import base64

def answer(path, req):
    obj = req['object']
    meta = obj['metadata']
    text = meta.get('annotations', {}).get('e2e.metahook.dev/secret-text', 'v1')
    secret = {
        'apiVersion': 'v1', 'kind': 'Secret',
        'metadata': {'name': meta['name'] + '-attached'},
        'data': {'text': base64.b64encode(text.encode()).decode()},
    }
    if path == '/finalize':
        return {'finalized': True, 'attachments': [secret]}
    seen = sum(len(v) for v in req['attachments'].values())
    out = {
        'labels': {'decorated-by': 'e2e-plan'},
        'annotations': {'e2e.metahook.dev/attachments-seen': str(seen)},
        'attachments': [secret],
    }
    if obj['kind'] == 'Widget':
        out['status'] = {'decorated': True, 'attachments': seen}
    return out
