/* ops: picks the family implementation for an (alg, op) request. */
#include "ops.h"

#include <string.h>

int op_setup(const op_request *req, bench_op *op, probe_err *err)
{
    memset(op, 0, sizeof(*op));
    op->size_bytes = -1;
    if (!alg_has_op(req->alg, req->op))
        return err_input(err, "op %s does not apply to %s", op_name(req->op), req->alg->name);

    if (req->op == OP_KEYGEN)
        return keygen_op_setup(req, op, err);
    switch (req->alg->family) {
    case FAM_RSA:
    case FAM_ECDSA:
    case FAM_EDDSA:
        return sig_op_setup(req, op, err);
    case FAM_KEX:
        return kex_op_setup(req, op, err);
    case FAM_AEAD:
        return aead_op_setup(req, op, err);
    case FAM_MAC:
        return mac_op_setup(req, op, err);
    case FAM_HASH:
        return hash_op_setup(req, op, err);
    }
    return err_input(err, "no implementation for %s", req->alg->name);
}

void op_destroy(bench_op *op)
{
    if (op->destroy != NULL && op->state != NULL)
        op->destroy(op->state);
    op->state = NULL;
}
