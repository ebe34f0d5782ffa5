/* forwarders: the PKCS#11 functions the shim passes straight through, one entry each, expanded in
 * se_shim.c into a function that routes the call to its token lock, runs the real function and
 * injects the profile's delay (a length query gets none). Functions with their own logic
 * (C_Initialize, C_Finalize, C_OpenSession, C_CloseSession, C_CloseAllSessions,
 * C_WaitForSlotEvent, C_GetFunctionList) are written out in se_shim.c.
 *
 * X(name, route, on, length_query, (parameters), (arguments))
 *   route          NONE (the global lock), SLOT or SESSION: whose token lock serializes the call
 *   on             the slot ID or session handle parameter that names it (0 for NONE)
 *   length_query   an expression over the parameters, true when the caller only asks for a size
 *                  (PKCS#11 section 5.2: a NULL output buffer), so no secure-element time is due */
#ifndef SECPERF_SE_SHIM_FORWARDERS_H
#define SECPERF_SE_SHIM_FORWARDERS_H

#define SHIM_FORWARDERS(X) \
    /* general, slot and token */                                                                    \
    X(C_GetInfo, NONE, 0, 0,                                                                         \
      (CK_INFO_PTR pInfo),                                                                           \
      (pInfo))                                                                                       \
    X(C_GetSlotList, NONE, 0, pSlotList == NULL,                                                     \
      (CK_BBOOL tokenPresent, CK_SLOT_ID_PTR pSlotList, CK_ULONG_PTR pulCount),                      \
      (tokenPresent, pSlotList, pulCount))                                                           \
    X(C_GetSlotInfo, SLOT, slotID, 0,                                                                \
      (CK_SLOT_ID slotID, CK_SLOT_INFO_PTR pInfo),                                                   \
      (slotID, pInfo))                                                                               \
    X(C_GetTokenInfo, SLOT, slotID, 0,                                                               \
      (CK_SLOT_ID slotID, CK_TOKEN_INFO_PTR pInfo),                                                  \
      (slotID, pInfo))                                                                               \
    X(C_GetMechanismList, SLOT, slotID, pMechanismList == NULL,                                      \
      (CK_SLOT_ID slotID, CK_MECHANISM_TYPE_PTR pMechanismList, CK_ULONG_PTR pulCount),              \
      (slotID, pMechanismList, pulCount))                                                            \
    X(C_GetMechanismInfo, SLOT, slotID, 0,                                                           \
      (CK_SLOT_ID slotID, CK_MECHANISM_TYPE type, CK_MECHANISM_INFO_PTR pInfo),                      \
      (slotID, type, pInfo))                                                                         \
    X(C_InitToken, SLOT, slotID, 0,                                                                  \
      (CK_SLOT_ID slotID, CK_UTF8CHAR_PTR pPin, CK_ULONG ulPinLen, CK_UTF8CHAR_PTR pLabel),          \
      (slotID, pPin, ulPinLen, pLabel))                                                              \
    X(C_InitPIN, SESSION, hSession, 0,                                                               \
      (CK_SESSION_HANDLE hSession, CK_UTF8CHAR_PTR pPin, CK_ULONG ulPinLen),                         \
      (hSession, pPin, ulPinLen))                                                                    \
    X(C_SetPIN, SESSION, hSession, 0,                                                                \
      (CK_SESSION_HANDLE hSession, CK_UTF8CHAR_PTR pOldPin, CK_ULONG ulOldLen,                       \
       CK_UTF8CHAR_PTR pNewPin, CK_ULONG ulNewLen),                                                  \
      (hSession, pOldPin, ulOldLen, pNewPin, ulNewLen))                                              \
    /* sessions */                                                                                   \
    X(C_GetSessionInfo, SESSION, hSession, 0,                                                        \
      (CK_SESSION_HANDLE hSession, CK_SESSION_INFO_PTR pInfo),                                       \
      (hSession, pInfo))                                                                             \
    X(C_GetOperationState, SESSION, hSession, pOperationState == NULL,                               \
      (CK_SESSION_HANDLE hSession, CK_BYTE_PTR pOperationState, CK_ULONG_PTR pulOperationStateLen),  \
      (hSession, pOperationState, pulOperationStateLen))                                             \
    X(C_SetOperationState, SESSION, hSession, 0,                                                     \
      (CK_SESSION_HANDLE hSession, CK_BYTE_PTR pOperationState, CK_ULONG ulOperationStateLen,        \
       CK_OBJECT_HANDLE hEncryptionKey, CK_OBJECT_HANDLE hAuthenticationKey),                        \
      (hSession, pOperationState, ulOperationStateLen, hEncryptionKey, hAuthenticationKey))          \
    X(C_Login, SESSION, hSession, 0,                                                                 \
      (CK_SESSION_HANDLE hSession, CK_USER_TYPE userType, CK_UTF8CHAR_PTR pPin, CK_ULONG ulPinLen),  \
      (hSession, userType, pPin, ulPinLen))                                                          \
    X(C_Logout, SESSION, hSession, 0,                                                                \
      (CK_SESSION_HANDLE hSession),                                                                  \
      (hSession))                                                                                    \
    /* objects */                                                                                    \
    X(C_CreateObject, SESSION, hSession, 0,                                                          \
      (CK_SESSION_HANDLE hSession, CK_ATTRIBUTE_PTR pTemplate, CK_ULONG ulCount,                     \
       CK_OBJECT_HANDLE_PTR phObject),                                                               \
      (hSession, pTemplate, ulCount, phObject))                                                      \
    X(C_CopyObject, SESSION, hSession, 0,                                                            \
      (CK_SESSION_HANDLE hSession, CK_OBJECT_HANDLE hObject, CK_ATTRIBUTE_PTR pTemplate,             \
       CK_ULONG ulCount, CK_OBJECT_HANDLE_PTR phNewObject),                                          \
      (hSession, hObject, pTemplate, ulCount, phNewObject))                                          \
    X(C_DestroyObject, SESSION, hSession, 0,                                                         \
      (CK_SESSION_HANDLE hSession, CK_OBJECT_HANDLE hObject),                                        \
      (hSession, hObject))                                                                           \
    X(C_GetObjectSize, SESSION, hSession, 0,                                                         \
      (CK_SESSION_HANDLE hSession, CK_OBJECT_HANDLE hObject, CK_ULONG_PTR pulSize),                  \
      (hSession, hObject, pulSize))                                                                  \
    X(C_GetAttributeValue, SESSION, hSession, all_values_null(pTemplate, ulCount),                   \
      (CK_SESSION_HANDLE hSession, CK_OBJECT_HANDLE hObject, CK_ATTRIBUTE_PTR pTemplate,             \
       CK_ULONG ulCount),                                                                            \
      (hSession, hObject, pTemplate, ulCount))                                                       \
    X(C_SetAttributeValue, SESSION, hSession, 0,                                                     \
      (CK_SESSION_HANDLE hSession, CK_OBJECT_HANDLE hObject, CK_ATTRIBUTE_PTR pTemplate,             \
       CK_ULONG ulCount),                                                                            \
      (hSession, hObject, pTemplate, ulCount))                                                       \
    X(C_FindObjectsInit, SESSION, hSession, 0,                                                       \
      (CK_SESSION_HANDLE hSession, CK_ATTRIBUTE_PTR pTemplate, CK_ULONG ulCount),                    \
      (hSession, pTemplate, ulCount))                                                                \
    X(C_FindObjects, SESSION, hSession, 0,                                                           \
      (CK_SESSION_HANDLE hSession, CK_OBJECT_HANDLE_PTR phObject, CK_ULONG ulMaxObjectCount,         \
       CK_ULONG_PTR pulObjectCount),                                                                 \
      (hSession, phObject, ulMaxObjectCount, pulObjectCount))                                        \
    X(C_FindObjectsFinal, SESSION, hSession, 0,                                                      \
      (CK_SESSION_HANDLE hSession),                                                                  \
      (hSession))                                                                                    \
    /* encryption and decryption */                                                                  \
    X(C_EncryptInit, SESSION, hSession, 0,                                                           \
      (CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism, CK_OBJECT_HANDLE hKey),              \
      (hSession, pMechanism, hKey))                                                                  \
    X(C_Encrypt, SESSION, hSession, pEncryptedData == NULL,                                          \
      (CK_SESSION_HANDLE hSession, CK_BYTE_PTR pData, CK_ULONG ulDataLen,                            \
       CK_BYTE_PTR pEncryptedData, CK_ULONG_PTR pulEncryptedDataLen),                                \
      (hSession, pData, ulDataLen, pEncryptedData, pulEncryptedDataLen))                             \
    X(C_EncryptUpdate, SESSION, hSession, pEncryptedPart == NULL,                                    \
      (CK_SESSION_HANDLE hSession, CK_BYTE_PTR pPart, CK_ULONG ulPartLen,                            \
       CK_BYTE_PTR pEncryptedPart, CK_ULONG_PTR pulEncryptedPartLen),                                \
      (hSession, pPart, ulPartLen, pEncryptedPart, pulEncryptedPartLen))                             \
    X(C_EncryptFinal, SESSION, hSession, pLastEncryptedPart == NULL,                                 \
      (CK_SESSION_HANDLE hSession, CK_BYTE_PTR pLastEncryptedPart,                                   \
       CK_ULONG_PTR pulLastEncryptedPartLen),                                                        \
      (hSession, pLastEncryptedPart, pulLastEncryptedPartLen))                                       \
    X(C_DecryptInit, SESSION, hSession, 0,                                                           \
      (CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism, CK_OBJECT_HANDLE hKey),              \
      (hSession, pMechanism, hKey))                                                                  \
    X(C_Decrypt, SESSION, hSession, pData == NULL,                                                   \
      (CK_SESSION_HANDLE hSession, CK_BYTE_PTR pEncryptedData, CK_ULONG ulEncryptedDataLen,          \
       CK_BYTE_PTR pData, CK_ULONG_PTR pulDataLen),                                                  \
      (hSession, pEncryptedData, ulEncryptedDataLen, pData, pulDataLen))                             \
    X(C_DecryptUpdate, SESSION, hSession, pPart == NULL,                                             \
      (CK_SESSION_HANDLE hSession, CK_BYTE_PTR pEncryptedPart, CK_ULONG ulEncryptedPartLen,          \
       CK_BYTE_PTR pPart, CK_ULONG_PTR pulPartLen),                                                  \
      (hSession, pEncryptedPart, ulEncryptedPartLen, pPart, pulPartLen))                             \
    X(C_DecryptFinal, SESSION, hSession, pLastPart == NULL,                                          \
      (CK_SESSION_HANDLE hSession, CK_BYTE_PTR pLastPart, CK_ULONG_PTR pulLastPartLen),              \
      (hSession, pLastPart, pulLastPartLen))                                                         \
    /* digests */                                                                                    \
    X(C_DigestInit, SESSION, hSession, 0,                                                            \
      (CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism),                                     \
      (hSession, pMechanism))                                                                        \
    X(C_Digest, SESSION, hSession, pDigest == NULL,                                                  \
      (CK_SESSION_HANDLE hSession, CK_BYTE_PTR pData, CK_ULONG ulDataLen, CK_BYTE_PTR pDigest,       \
       CK_ULONG_PTR pulDigestLen),                                                                   \
      (hSession, pData, ulDataLen, pDigest, pulDigestLen))                                           \
    X(C_DigestUpdate, SESSION, hSession, 0,                                                          \
      (CK_SESSION_HANDLE hSession, CK_BYTE_PTR pPart, CK_ULONG ulPartLen),                           \
      (hSession, pPart, ulPartLen))                                                                  \
    X(C_DigestKey, SESSION, hSession, 0,                                                             \
      (CK_SESSION_HANDLE hSession, CK_OBJECT_HANDLE hKey),                                           \
      (hSession, hKey))                                                                              \
    X(C_DigestFinal, SESSION, hSession, pDigest == NULL,                                             \
      (CK_SESSION_HANDLE hSession, CK_BYTE_PTR pDigest, CK_ULONG_PTR pulDigestLen),                  \
      (hSession, pDigest, pulDigestLen))                                                             \
    /* signatures and verification */                                                                \
    X(C_SignInit, SESSION, hSession, 0,                                                              \
      (CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism, CK_OBJECT_HANDLE hKey),              \
      (hSession, pMechanism, hKey))                                                                  \
    X(C_Sign, SESSION, hSession, pSignature == NULL,                                                 \
      (CK_SESSION_HANDLE hSession, CK_BYTE_PTR pData, CK_ULONG ulDataLen, CK_BYTE_PTR pSignature,    \
       CK_ULONG_PTR pulSignatureLen),                                                                \
      (hSession, pData, ulDataLen, pSignature, pulSignatureLen))                                     \
    X(C_SignUpdate, SESSION, hSession, 0,                                                            \
      (CK_SESSION_HANDLE hSession, CK_BYTE_PTR pPart, CK_ULONG ulPartLen),                           \
      (hSession, pPart, ulPartLen))                                                                  \
    X(C_SignFinal, SESSION, hSession, pSignature == NULL,                                            \
      (CK_SESSION_HANDLE hSession, CK_BYTE_PTR pSignature, CK_ULONG_PTR pulSignatureLen),            \
      (hSession, pSignature, pulSignatureLen))                                                       \
    X(C_SignRecoverInit, SESSION, hSession, 0,                                                       \
      (CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism, CK_OBJECT_HANDLE hKey),              \
      (hSession, pMechanism, hKey))                                                                  \
    X(C_SignRecover, SESSION, hSession, pSignature == NULL,                                          \
      (CK_SESSION_HANDLE hSession, CK_BYTE_PTR pData, CK_ULONG ulDataLen, CK_BYTE_PTR pSignature,    \
       CK_ULONG_PTR pulSignatureLen),                                                                \
      (hSession, pData, ulDataLen, pSignature, pulSignatureLen))                                     \
    X(C_VerifyInit, SESSION, hSession, 0,                                                            \
      (CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism, CK_OBJECT_HANDLE hKey),              \
      (hSession, pMechanism, hKey))                                                                  \
    X(C_Verify, SESSION, hSession, 0,                                                                \
      (CK_SESSION_HANDLE hSession, CK_BYTE_PTR pData, CK_ULONG ulDataLen, CK_BYTE_PTR pSignature,    \
       CK_ULONG ulSignatureLen),                                                                     \
      (hSession, pData, ulDataLen, pSignature, ulSignatureLen))                                      \
    X(C_VerifyUpdate, SESSION, hSession, 0,                                                          \
      (CK_SESSION_HANDLE hSession, CK_BYTE_PTR pPart, CK_ULONG ulPartLen),                           \
      (hSession, pPart, ulPartLen))                                                                  \
    X(C_VerifyFinal, SESSION, hSession, 0,                                                           \
      (CK_SESSION_HANDLE hSession, CK_BYTE_PTR pSignature, CK_ULONG ulSignatureLen),                 \
      (hSession, pSignature, ulSignatureLen))                                                        \
    X(C_VerifyRecoverInit, SESSION, hSession, 0,                                                     \
      (CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism, CK_OBJECT_HANDLE hKey),              \
      (hSession, pMechanism, hKey))                                                                  \
    X(C_VerifyRecover, SESSION, hSession, pData == NULL,                                             \
      (CK_SESSION_HANDLE hSession, CK_BYTE_PTR pSignature, CK_ULONG ulSignatureLen,                  \
       CK_BYTE_PTR pData, CK_ULONG_PTR pulDataLen),                                                  \
      (hSession, pSignature, ulSignatureLen, pData, pulDataLen))                                     \
    /* dual-function operations */                                                                   \
    X(C_DigestEncryptUpdate, SESSION, hSession, pEncryptedPart == NULL,                              \
      (CK_SESSION_HANDLE hSession, CK_BYTE_PTR pPart, CK_ULONG ulPartLen,                            \
       CK_BYTE_PTR pEncryptedPart, CK_ULONG_PTR pulEncryptedPartLen),                                \
      (hSession, pPart, ulPartLen, pEncryptedPart, pulEncryptedPartLen))                             \
    X(C_DecryptDigestUpdate, SESSION, hSession, pPart == NULL,                                       \
      (CK_SESSION_HANDLE hSession, CK_BYTE_PTR pEncryptedPart, CK_ULONG ulEncryptedPartLen,          \
       CK_BYTE_PTR pPart, CK_ULONG_PTR pulPartLen),                                                  \
      (hSession, pEncryptedPart, ulEncryptedPartLen, pPart, pulPartLen))                             \
    X(C_SignEncryptUpdate, SESSION, hSession, pEncryptedPart == NULL,                                \
      (CK_SESSION_HANDLE hSession, CK_BYTE_PTR pPart, CK_ULONG ulPartLen,                            \
       CK_BYTE_PTR pEncryptedPart, CK_ULONG_PTR pulEncryptedPartLen),                                \
      (hSession, pPart, ulPartLen, pEncryptedPart, pulEncryptedPartLen))                             \
    X(C_DecryptVerifyUpdate, SESSION, hSession, pPart == NULL,                                       \
      (CK_SESSION_HANDLE hSession, CK_BYTE_PTR pEncryptedPart, CK_ULONG ulEncryptedPartLen,          \
       CK_BYTE_PTR pPart, CK_ULONG_PTR pulPartLen),                                                  \
      (hSession, pEncryptedPart, ulEncryptedPartLen, pPart, pulPartLen))                             \
    /* keys */                                                                                       \
    X(C_GenerateKey, SESSION, hSession, 0,                                                           \
      (CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism, CK_ATTRIBUTE_PTR pTemplate,          \
       CK_ULONG ulCount, CK_OBJECT_HANDLE_PTR phKey),                                                \
      (hSession, pMechanism, pTemplate, ulCount, phKey))                                             \
    X(C_GenerateKeyPair, SESSION, hSession, 0,                                                       \
      (CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism, CK_ATTRIBUTE_PTR pPublicKeyTemplate, \
       CK_ULONG ulPublicKeyAttributeCount, CK_ATTRIBUTE_PTR pPrivateKeyTemplate,                     \
       CK_ULONG ulPrivateKeyAttributeCount, CK_OBJECT_HANDLE_PTR phPublicKey,                        \
       CK_OBJECT_HANDLE_PTR phPrivateKey),                                                           \
      (hSession, pMechanism, pPublicKeyTemplate, ulPublicKeyAttributeCount, pPrivateKeyTemplate,     \
       ulPrivateKeyAttributeCount, phPublicKey, phPrivateKey))                                       \
    X(C_WrapKey, SESSION, hSession, pWrappedKey == NULL,                                             \
      (CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism, CK_OBJECT_HANDLE hWrappingKey,       \
       CK_OBJECT_HANDLE hKey, CK_BYTE_PTR pWrappedKey, CK_ULONG_PTR pulWrappedKeyLen),               \
      (hSession, pMechanism, hWrappingKey, hKey, pWrappedKey, pulWrappedKeyLen))                     \
    X(C_UnwrapKey, SESSION, hSession, 0,                                                             \
      (CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism, CK_OBJECT_HANDLE hUnwrappingKey,     \
       CK_BYTE_PTR pWrappedKey, CK_ULONG ulWrappedKeyLen, CK_ATTRIBUTE_PTR pTemplate,                \
       CK_ULONG ulAttributeCount, CK_OBJECT_HANDLE_PTR phKey),                                       \
      (hSession, pMechanism, hUnwrappingKey, pWrappedKey, ulWrappedKeyLen, pTemplate,                \
       ulAttributeCount, phKey))                                                                     \
    X(C_DeriveKey, SESSION, hSession, 0,                                                             \
      (CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism, CK_OBJECT_HANDLE hBaseKey,           \
       CK_ATTRIBUTE_PTR pTemplate, CK_ULONG ulAttributeCount, CK_OBJECT_HANDLE_PTR phKey),           \
      (hSession, pMechanism, hBaseKey, pTemplate, ulAttributeCount, phKey))                          \
    /* random numbers and legacy */                                                                  \
    X(C_SeedRandom, SESSION, hSession, 0,                                                            \
      (CK_SESSION_HANDLE hSession, CK_BYTE_PTR pSeed, CK_ULONG ulSeedLen),                           \
      (hSession, pSeed, ulSeedLen))                                                                  \
    X(C_GenerateRandom, SESSION, hSession, RandomData == NULL,                                       \
      (CK_SESSION_HANDLE hSession, CK_BYTE_PTR RandomData, CK_ULONG ulRandomLen),                    \
      (hSession, RandomData, ulRandomLen))                                                           \
    X(C_GetFunctionStatus, SESSION, hSession, 0,                                                     \
      (CK_SESSION_HANDLE hSession),                                                                  \
      (hSession))                                                                                    \
    X(C_CancelFunction, SESSION, hSession, 0,                                                        \
      (CK_SESSION_HANDLE hSession),                                                                  \
      (hSession))

#endif
