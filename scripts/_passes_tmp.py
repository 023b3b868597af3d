import sys, time
sys.argv=['b']
import bench_redact as b
R = sys.modules[b.redact_text.__module__]
text, *_ = b.build_log()
def t(name, fn, *a):
    best = 9e9
    for _ in range(5):
        s = time.process_time(); fn(*a); best = min(best, time.process_time() - s)
    print(f"{name:28s} {best*1000:8.1f} ms")
t("total", b.redact_text, text)
t("passes", R._redact_passes if hasattr(R, "_redact_passes") else b.redact_text, text)
x = text
for n in ["_redact_pem","_redact_urls","_redact_shapes","_redact_cli","_redact_keyed"]:
    f = getattr(R, n, None)
    if f is None: print("no", n); continue
    t(n, f, x); x = f(x)
