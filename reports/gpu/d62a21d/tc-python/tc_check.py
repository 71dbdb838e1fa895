import sys
import deltaproof
from deltaproof.cuda_tc import load

chunk_gdn2 = load(sys.argv[1])
ok = True
for fx in ("gdn2/t64-c64", "gdn2/t200-c64", "gdn2/t32-c16-bf16"):
    report = deltaproof.check(chunk_gdn2, fixture=fx, precision="bf16")
    print(report.summary())
    report.save(f"{sys.argv[2]}/cuda-tc-{fx.replace('/', '-')}.json")
    ok &= report.passed
proof = deltaproof.falsify(chunk_gdn2, fixture="gdn2/t64-c64", precision="bf16")
print(proof.summary())
ok &= proof.passed
sys.exit(0 if ok else 1)
