# The DecoratorController's hook of tests/e2e/decorator.rs, served by
# server.py (which defines DIR, the test's scratch directory).
import os

def answer(path, req):
    obj = req['object']
    meta = obj['metadata']
    want = meta.get('annotations', {}).get('e2e.metahook.dev/want-secret') != 'no'
    secret = {
        'apiVersion': 'v1', 'kind': 'Secret',
        'metadata': {'name': meta['name'] + '-attached'},
        'stringData': {'for': meta['name']},
    }
    attachments = [secret] if want else []
    if path == '/finalize':
        with open(os.path.join(DIR, 'finalized.log'), 'a') as f:
            f.write(meta['name'] + '\n')
        return {'finalized': True, 'attachments': attachments}
    seen = sum(len(v) for v in req['attachments'].values())
    return {
        'labels': {'decorated-by': 'e2e', 'remove-me': None},
        'annotations': {'e2e.metahook.dev/attachments-seen': str(seen)},
        'status': {'decorated': True, 'attachments': seen},
        'attachments': attachments,
    }
