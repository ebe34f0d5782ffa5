/* M0+ build (newlib has no directories): the declarations Mbed TLS's certificate-directory
 * loader (mbedtls_x509_crt_parse_path, unused here) compiles against; opendir always fails. */
#ifndef SP_M0_DIRENT_H
#define SP_M0_DIRENT_H
typedef struct sp_m0_dir DIR;
struct dirent { char d_name[256]; };
DIR *opendir(const char *path);
struct dirent *readdir(DIR *dir);
int closedir(DIR *dir);
#endif
