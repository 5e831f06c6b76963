# The rolling test's sync hook (tests/e2e/rolling.rs), served by server.py.
def answer(path, req):
    parent = req['parent']
    spec = parent['spec']
    labels = spec.get('selector', {}).get('matchLabels', {})
    gadgets = [{
        'apiVersion': 'e2e.metahook.dev/v1', 'kind': 'Gadget',
        'metadata': {'name': '%s-%d' % (parent['metadata']['name'], i), 'labels': labels},
        'spec': {'version': spec['version']},
    } for i in range(spec['replicas'])]
    return {'status': {'gadgets': len(gadgets)}, 'children': gadgets}
