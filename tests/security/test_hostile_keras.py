"""Hostile ``.keras`` files: Lambda layers naming modules and functions, marshalled code,
hostile class names. With ``safe_mode=True`` (the default) no module named by the file is
imported and no bytecode is unmarshalled; the sentinel a payload would create never appears.
"""

import base64
import json
import marshal
import zipfile

import eagerflow as ef
from eagerflow import keras
from tests.security.hostile import assert_safe, record, run_cases


def _base_model_file(tmp):
    inputs = keras.Input((2,))
    outputs = keras.layers.Dense(2, name="d")(keras.layers.Lambda(ef.negative)(inputs))
    path = tmp / "base.keras"
    keras.Model(inputs, outputs).save(str(path))
    with zipfile.ZipFile(path) as z:
        return {name: z.read(name) for name in z.namelist()}


def _with_lambda(members, function, function_type="function", arguments=None, extra=None):
    config = json.loads(members["config.json"])
    layers = config["config"]["layers"]
    lam = next(layer for layer in layers if layer["class_name"] == "Lambda")
    lam["config"]["function"] = function
    lam["config"]["function_type"] = function_type
    lam["config"]["arguments"] = arguments or {}
    lam["config"].update(extra or {})
    out = dict(members)
    out["config.json"] = json.dumps(config).encode()
    return out


def _write(path, members):
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return str(path)


def _marshalled(sentinel):
    code = compile("lambda x: (__import__('os').mkdir(%r), x)[1]" % str(sentinel), "<x>",
                   "eval")
    fn = eval(code)  # noqa: S307 - builds the payload the test expects to be refused
    return base64.b64encode(marshal.dumps(fn.__code__)).decode("ascii")


def test_hostile_keras_files(tmp_path):
    members = _base_model_file(tmp_path)
    sentinel = tmp_path / "PWNED"
    # A module that creates the sentinel when imported: the file names it, and only
    # safe_mode=False may import it.
    (tmp_path / "evilmod.py").write_text(
        "import os\nos.mkdir(%r)\ndef f(x):\n    return x\n" % str(sentinel))
    cmd = "mkdir %s" % sentinel
    hostile = {
        "Lambda os.system": {"module": "os", "name": "system"},
        "Lambda os.mkdir with arguments": ({"module": "os", "name": "mkdir"},
                                          {"path": str(sentinel)}),
        "Lambda subprocess.getoutput": {"module": "subprocess", "name": "getoutput"},
        "Lambda subprocess.run": ({"module": "subprocess", "name": "run"},
                                  {"args": cmd, "shell": True}),
        "Lambda pydoc.locate": {"module": "pydoc", "name": "locate"},
        "Lambda builtins.exec": {"module": "builtins", "name": "exec"},
        "Lambda builtins.eval": {"module": "builtins", "name": "eval"},
        "Lambda builtins.__import__": {"module": "builtins", "name": "__import__"},
        "Lambda an importable module": {"module": "evilmod", "name": "f"},
        "Lambda attribute chain to os": {"module": "eagerflow.keras.saving",
                                         "name": "os.system"},
        "Lambda eagerflow module attribute": {"module": "eagerflow.function.serialize",
                                              "name": "os"},
        "Lambda a name only": "system",
        "Lambda dunder name": "__import__",
    }
    cases = []
    for k, (name, spec) in enumerate(hostile.items()):
        function, arguments = spec if isinstance(spec, tuple) else (spec, None)
        path = _write(tmp_path / ("h%d.keras" % k), _with_lambda(members, function,
                                                                  arguments=arguments))
        cases.append({"name": name, "path": path, "code": "ef.keras.models.load_model(PATH)"})
    path = _write(tmp_path / "marshal.keras", _with_lambda(
        members, {"code": _marshalled(sentinel), "defaults": None, "closure": None},
        "lambda"))
    cases.append({"name": "Lambda marshalled code", "path": path,
                  "code": "ef.keras.models.load_model(PATH)"})
    cases.append({"name": "Lambda marshalled code, Lambda.from_config", "path": path,
                  "code": """
import json, zipfile
config = json.loads(zipfile.ZipFile(PATH).read("config.json"))
lam = next(l for l in config["config"]["layers"] if l["class_name"] == "Lambda")
ef.keras.layers.Lambda.from_config(lam["config"])
"""})
    path = _write(tmp_path / "mask.keras", _with_lambda(
        members, {"module": ef.negative.__module__, "name": "negative"},
        extra={"mask": {"module": "os", "name": "system"}, "mask_type": "function"}))
    cases.append({"name": "Lambda mask naming os.system", "path": path,
                  "code": "ef.keras.models.load_model(PATH)"})
    config = json.loads(members["config.json"])
    config["config"]["layers"][1]["class_name"] = "__import__"
    path = _write(tmp_path / "cls.keras", dict(members, **{
        "config.json": json.dumps(config).encode()}))
    cases.append({"name": "class name __import__", "path": path,
                  "code": "ef.keras.models.load_model(PATH)"})
    config = json.loads(members["config.json"])
    config["config"]["layers"][2]["config"]["activation"] = {
        "module": "os", "class_name": "function", "config": "system",
        "registered_name": "system"}
    path = _write(tmp_path / "act.keras", dict(members, **{
        "config.json": json.dumps(config).encode()}))
    cases.append({"name": "activation naming os.system", "path": path,
                  "code": "ef.keras.models.load_model(PATH)"})
    results = run_cases(cases, tmp_path)
    record(".keras files", results)
    assert_safe(results, [sentinel], allowed=("refused",))
    assert "safe_mode=False" in results["Lambda marshalled code"][1]
    assert "safe_mode=False" in results["Lambda os.system"][1]


def test_safe_mode_false_is_explicit(tmp_path):
    """safe_mode=False rebuilds a named module-level function (documented as trusting the
    file); the default refuses the same file."""
    members = _base_model_file(tmp_path)
    (tmp_path / "mymod.py").write_text("import eagerflow as ef\ndef neg(x):\n"
                                       "    return ef.negative(x)\n")
    path = _write(tmp_path / "mine.keras", _with_lambda(
        members, {"module": "mymod", "name": "neg"}))
    results = run_cases([
        {"name": "default", "path": path, "code": "ef.keras.models.load_model(PATH)"},
        {"name": "custom_objects", "path": path, "code": """
import sys
assert "mymod" not in sys.modules
ef.keras.models.load_model(PATH, custom_objects={"neg": ef.negative})
assert "mymod" not in sys.modules
"""},
        {"name": "unsafe", "path": path, "code": """
import sys
m = ef.keras.models.load_model(PATH, safe_mode=False)
assert m.layers[1].function is sys.modules["mymod"].neg
"""}], tmp_path)
    record(".keras safe_mode", results)
    assert results["default"][0] == "refused", results
    assert "safe_mode=False" in results["default"][1]
    assert results["custom_objects"][0] == "loaded", results
    assert results["unsafe"][0] == "loaded", results
